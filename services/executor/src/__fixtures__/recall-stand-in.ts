// A stand-in for the recall service in the executor's tests: a real NATS micro service named `recall` with the
// endpoint `actions` on `mesh.recall.actions`, answering as the recall service does (seed 004 `_dynamic_tools`,
// or a service error whose code is the seed's HTTP status and whose payload is the seed's error body). It
// records every request it gets, headers included. (Services never import each other, so the real one is not
// started here.)
import { Services, type ErrorBody } from '@agentmesh/protocol';
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';

export interface RecallStandInRequest {
  readonly body: Record<string, unknown>;
  readonly headers: Record<string, string>;
}

export type RecallStandInAnswer =
  { readonly tools: unknown } | { readonly error: { readonly status: number; readonly body: ErrorBody } };

export interface RecallStandIn {
  readonly requests: RecallStandInRequest[];
  stop(): Promise<void>;
}

type ForeignConnection = ConstructorParameters<typeof Svcm>[0];

export async function startRecallStandIn(
  nc: NatsConnection,
  answer: (request: RecallStandInRequest) => RecallStandInAnswer,
): Promise<RecallStandIn> {
  const requests: RecallStandInRequest[] = [];
  // @nats-io/services pins its own nats-core prerelease; the connection is the same object at run time.
  const service: Service = await new Svcm(nc as unknown as ForeignConnection).add({
    name: Services.RECALL.name,
    version: '0.0.1',
    queue: Services.RECALL.name,
  });
  service.addEndpoint('actions', {
    subject: Services.RECALL.subject,
    handler: (error: Error | null, msg: ServiceMsg) => {
      if (error) return;
      const headers: Record<string, string> = {};
      for (const key of msg.headers?.keys() ?? []) headers[key.toLowerCase()] = msg.headers!.get(key);
      const request = { body: msg.json<Record<string, unknown>>(), headers };
      requests.push(request);
      const reply = answer(request);
      if ('tools' in reply) msg.respond(JSON.stringify(reply.tools));
      else msg.respondError(reply.error.status, reply.error.body.message, JSON.stringify(reply.error.body));
    },
  });
  return { requests, stop: () => service.stop().then(() => undefined) };
}
