/**
 * A gateway stopping while a delivery attempt hangs does not wait for the endpoint: the attempt is ended
 * without being spent and its delivery handed back, so the next gateway delivers it under the same webhook-id.
 */
import { randomBytes } from 'node:crypto';
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, startTestGateway, type TestGateway } from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const ADMIN_KEY = 'admin-key-webhook-shutdown';
const env = {
  ADMIN_API_KEYS: ADMIN_KEY,
  CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
  WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
  // Far longer than the test may take: only the stop can end the hanging attempt.
  WEBHOOK_TIMEOUT_MS: '60000',
};

let nats: NatsServer;
let receiver: WebhookReceiver;
let client: NatsConnection;
let next: TestGateway | undefined;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
  client = await connect({ servers: nats.url });
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await next?.stop();
  await client?.close();
  await nats?.stop();
});

it('when a gateway stops during a hanging attempt, the stop does not wait for it and the next gateway delivers the same webhook-id', async () => {
  const first = await startTestGateway(nats.url, env);
  const created = await call(first.url, 'POST', '/v1/admin/webhooks', {
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'x-account-id': 'acme' },
    body: { url: `${receiver.url}/slow-then-fine` },
  });
  receiver.secret('/slow-then-fine', created.body.secret as string);
  receiver.plan('/slow-then-fine', { hang: true });
  const statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks);
  await statuses.create({
    trace_id: newTraceId(),
    account_id: 'acme',
    workflow_id: 'report',
    status: 'done',
    attempt: 1,
    updated_at: new Date().toISOString(),
  });
  await waitFor(() => receiver.hanging() === 1, { timeoutMs: 15_000 });
  const hung = receiver.received[0]!;

  receiver.plan('/slow-then-fine', {});
  await first.stop();
  next = await startTestGateway(nats.url, env);
  await waitFor(() => receiver.received.some((r) => r.status === 204), { timeoutMs: 15_000 });
  const delivered = receiver.received.find((r) => r.status === 204)!;
  expect(delivered.id).toBe(hung.id);
  expect(delivered.verified).toBe(true);
}, 60_000);
