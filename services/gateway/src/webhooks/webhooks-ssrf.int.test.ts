/**
 * The SSRF guard at delivery time: an endpoint registered while the deployment allowed its address is
 * refused once the delivering gateway's allow-list no longer lists it — no request reaches the receiver,
 * and the delivery is dead-lettered at once (trying again changes nothing until the allow-list does).
 */
import { randomBytes } from 'node:crypto';
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call, startTestGateway, type Json, type TestGateway } from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const ADMIN_KEY = 'admin-key-webhook-ssrf';
// Both gateways of one deployment share the credentials master key (endpoint secrets are encrypted with it).
const shared = { ADMIN_API_KEYS: ADMIN_KEY, CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64') };
const asAcme = { authorization: `Bearer ${ADMIN_KEY}`, 'x-account-id': 'acme' };

let nats: NatsServer;
let registering: TestGateway;
let delivering: TestGateway;
let receiver: WebhookReceiver;
let client: NatsConnection;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
  // The management door of a deployment that allowed loopback, delivering nothing itself...
  registering = await startTestGateway(nats.url, {
    ...shared,
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOKS_ENABLED: 'false',
  });
  // ...and the gateway that delivers, whose allow-list no longer has it.
  delivering = await startTestGateway(nats.url, {
    ...shared,
    WEBHOOK_RETRY_SCHEDULE_MS: '50,50',
  });
  client = await connect({ servers: nats.url });
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await registering?.stop();
  await delivering?.stop();
  await client?.close();
  await nats?.stop();
});

it('a delivery to an address the delivering gateway does not allow reaches nothing and is dead-lettered at once, naming the guard', async () => {
  const created = await call(registering.url, 'POST', '/v1/admin/webhooks', {
    headers: asAcme,
    body: { url: `${receiver.url}/internal` },
  });
  expect(created.status).toBe(201);
  const refusedHere = await call(delivering.url, 'POST', '/v1/admin/webhooks', {
    headers: asAcme,
    body: { url: `${receiver.url}/internal` },
  });
  expect(refusedHere.status).toBe(400);

  const statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks);
  const traceId = newTraceId();
  await statuses.create({
    trace_id: traceId,
    account_id: 'acme',
    workflow_id: 'report',
    status: 'done',
    attempt: 1,
    updated_at: new Date().toISOString(),
  });
  const letters = await waitFor(
    async () => {
      const listed = await call(delivering.url, 'GET', '/v1/admin/webhooks/dead-letters', {
        headers: asAcme,
      });
      return (listed.body as Json).dead_letters.length > 0
        ? ((listed.body as Json).dead_letters as Json[])
        : undefined;
    },
    { timeoutMs: 15_000 },
  );
  expect(letters).toHaveLength(1);
  expect(letters[0]).toMatchObject({ trace_id: traceId, attempts: 1 });
  expect(letters[0].reason).toMatch(/refused by the SSRF guard: .*loopback address/);
  expect(receiver.received).toHaveLength(0);
});
