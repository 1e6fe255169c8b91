/**
 * Stands in for the recall service in the tests of the services that call it (the gateway's seed 004
 * endpoints, the executor's `recall_actions` tool), which may not import services/recall: a real NATS
 * micro service (`@nats-io/services`, as services/recall runs) named `recall` on `mesh.recall.actions`,
 * answering as a test scripts it: a body (e.g. seed 004's `{_dynamic_tools}`), a service error
 * (`Nats-Service-Error-Code` + the seed's error body as payload, exactly as the recall service answers),
 * or raw bytes without service headers. Every request it got is recorded, header names in lower case.
 */
import { Services } from '@agentmesh/protocol';
import { Svcm, type Service, type ServiceMsg } from '@nats-io/services';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';

export interface RecallStandInRequest {
  readonly body: Record<string, unknown>;
  /** Header names in lower case. */
  readonly headers: Record<string, string>;
}

export type RecallStandInAnswer =
  /** Sent as JSON, as it is. */
  | { readonly body: unknown }
  /** A service error; `description` defaults to the body's `message`. */
  | { readonly error: { readonly status: number; readonly body?: unknown; readonly description?: string } }
  /** Bytes as they are, without service headers. */
  | { readonly raw: string };

export interface RecallStandIn {
  readonly requests: RecallStandInRequest[];
  stop(): Promise<void>;
}

/** @nats-io/services pins its own nats-core prerelease; the connection is the same object at run time. */
type ForeignConnection = ConstructorParameters<typeof Svcm>[0];

/** Starts the stand-in on `nc` (the caller's connection, which it leaves open). */
export async function startRecallStandIn(
  nc: NatsConnection,
  answer: (request: RecallStandInRequest) => RecallStandInAnswer,
): Promise<RecallStandIn> {
  const requests: RecallStandInRequest[] = [];
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
      for (const key of msg.headers?.keys() ?? []) headers[key.toLowerCase()] = msg.headers?.get(key) ?? '';
      const request: RecallStandInRequest = { body: msg.json<Record<string, unknown>>(), headers };
      requests.push(request);
      const reply = answer(request);
      if ('body' in reply) msg.respond(JSON.stringify(reply.body));
      else if ('raw' in reply) msg.respond(reply.raw);
      else {
        const { status, body, description } = reply.error;
        msg.respondError(
          status,
          description ?? messageOf(body) ?? 'refused',
          body === undefined ? undefined : JSON.stringify(body),
          // Headers of our nats-core, as services/recall passes them (the prerelease's types differ).
          { headers: natsHeaders() } as unknown as Parameters<ServiceMsg['respondError']>[3],
        );
      }
    },
  });
  await nc.flush();
  return { requests, stop: () => service.stop().then(() => undefined) };
}

function messageOf(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !('message' in body)) return undefined;
  return typeof body.message === 'string' ? body.message : undefined;
}
