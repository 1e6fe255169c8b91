/**
 * Stands in for the recall service in the gateway's tests: a real NATS micro service (`@nats-io/services`,
 * as services/recall runs) on `mesh.recall.actions`, answering as a test scripts it — tools, a service
 * error (`Nats-Service-Error-Code` + the seed's error body as payload, exactly as the recall service
 * answers), or raw bytes without service headers. Every request it got is recorded, headers included.
 */
import { Services } from '@agentmesh/protocol';
import { Svcm, type ServiceMsg } from '@nats-io/services';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';

export type StandInAnswer =
  | { tools: unknown[] }
  | { serviceError: { status: number; body?: unknown; description?: string } }
  | { raw: string };

export interface ReceivedRecall {
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

export interface RecallStandIn {
  received: ReceivedRecall[];
  stop(): Promise<void>;
}

const encoder = new TextEncoder();

export async function startRecallStandIn(
  natsUrl: string,
  answer: (request: ReceivedRecall) => StandInAnswer,
): Promise<RecallStandIn> {
  const nc: NatsConnection = await connect({ servers: natsUrl, name: 'recall-stand-in' });
  // @nats-io/services pins a prerelease nats-core whose types differ from ours; the objects are the same.
  const service = await new Svcm(nc as unknown as ConstructorParameters<typeof Svcm>[0]).add({
    name: Services.RECALL.name,
    version: '0.0.1',
    queue: 'recall',
  });
  const received: ReceivedRecall[] = [];
  service.addEndpoint('actions', {
    subject: Services.RECALL.subject,
    handler: (error: Error | null, msg: ServiceMsg) => {
      if (error) return;
      const request: ReceivedRecall = {
        body: JSON.parse(new TextDecoder().decode(msg.data)) as Record<string, unknown>,
        headers: Object.fromEntries(
          (msg.headers?.keys() ?? []).map((key) => [key, msg.headers?.get(key) ?? '']),
        ),
      };
      received.push(request);
      const scripted = answer(request);
      if ('tools' in scripted)
        msg.respond(encoder.encode(JSON.stringify({ _dynamic_tools: scripted.tools })));
      else if ('raw' in scripted) msg.respond(encoder.encode(scripted.raw));
      else {
        const { status, body, description } = scripted.serviceError;
        msg.respondError(
          status,
          description ?? 'refused',
          body === undefined ? undefined : encoder.encode(JSON.stringify(body)),
          // Headers of our nats-core, as services/recall passes them (the prerelease's types differ).
          { headers: natsHeaders() } as unknown as Parameters<ServiceMsg['respondError']>[3],
        );
      }
    },
  });
  await nc.flush();
  return {
    received,
    async stop() {
      await service.stop();
      await nc.drain();
    },
  };
}
