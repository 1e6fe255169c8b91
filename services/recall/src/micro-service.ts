/**
 * The NATS micro service API (`@nats-io/services`) seen through this package's nats-core types.
 *
 * Why: `@nats-io/services` 3.0.0-25 (its latest) pins its own prerelease nats-core 3.0.0-50, whose types
 * differ from the nats-core 3.4 the rest of the mesh uses (e.g. `Match` is an enum there), although the
 * objects are the same at run time: the service only calls `subscribe`/`respond` on the connection we give
 * it, and its messages wrap our connection's messages. The casts live here and nowhere else.
 */
import { Svcm, type Service, type ServiceConfig, type ServiceMsg } from '@nats-io/services';
import type { Msg, NatsConnection, Payload, PublishOptions } from '@nats-io/transport-node';

export type { Service, ServiceConfig };

/** A request to a service endpoint, in this package's nats-core types. */
export interface ServiceRequest extends Msg {
  /** Replies with the `Nats-Service-Error-Code` / `Nats-Service-Error` headers set, and `data` as payload. */
  respondError(code: number, description: string, data?: Payload, opts?: PublishOptions): boolean;
}

type ForeignConnection = ConstructorParameters<typeof Svcm>[0];

export function addMicroService(nc: NatsConnection, config: ServiceConfig): Promise<Service> {
  return new Svcm(nc as unknown as ForeignConnection).add(config);
}

export interface EndpointSpec {
  name: string;
  subject: string;
  handler: (request: ServiceRequest) => void;
  onError: (error: Error) => void;
}

export function addEndpoint(service: Service, spec: EndpointSpec): void {
  service.addEndpoint(spec.name, {
    subject: spec.subject,
    handler: (error: Error | null, msg: ServiceMsg) => {
      if (error) spec.onError(error);
      else spec.handler(msg as unknown as ServiceRequest);
    },
  });
}
