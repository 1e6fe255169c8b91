/**
 * Webhook endpoints are an account's own, and bad input is a clear 4xx (security index, finding 14): another
 * account cannot see, change, rotate, ping or re-drive them, nor receive an event of another account's task;
 * a URL on a host the deployment's SSRF guard forbids is refused at registration with the reason.
 */
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, type Json, type TestGateway, startTestGateway } from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const ADMIN_KEY = 'admin-key-webhook-tenancy';
const ACME_KEY = 'acme-api-key-0123456789abcdef';
const admin = { authorization: `Bearer ${ADMIN_KEY}` };
const asAccount = (accountId: string) => ({ ...admin, 'x-account-id': accountId });

let nats: NatsServer;
let gw: TestGateway;
let receiver: WebhookReceiver;
let client: NatsConnection;
let acmeEndpoint: Json;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
  gw = await startTestGateway(nats.url, {
    ADMIN_API_KEYS: ADMIN_KEY,
    API_KEYS: `${ACME_KEY}=acme`,
    // Only this exact loopback address: others (10/8, ::1, metadata, localhost) stay forbidden.
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
  });
  client = await connect({ servers: nats.url });
  const created = await call(gw.url, 'POST', '/v1/admin/webhooks', {
    headers: asAccount('acme'),
    body: { url: `${receiver.url}/acme` },
  });
  expect(created.status).toBe(201);
  acmeEndpoint = created.body;
  receiver.secret('/acme', acmeEndpoint.secret as string);
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

describe('tenancy of webhook endpoints', () => {
  it("another account does not see acme's endpoint in its list, and gets 404 on show, delete, rotate and test", async () => {
    const globex = asAccount('globex');
    const list = await call(gw.url, 'GET', '/v1/admin/webhooks', { headers: globex });
    expect(list.status).toBe(200);
    expect(list.body.webhooks).toEqual([]);
    for (const [method, path] of [
      ['GET', `/v1/admin/webhooks/${acmeEndpoint.id}`],
      ['DELETE', `/v1/admin/webhooks/${acmeEndpoint.id}`],
      ['POST', `/v1/admin/webhooks/${acmeEndpoint.id}/rotate-secret`],
      ['POST', `/v1/admin/webhooks/${acmeEndpoint.id}/test`],
    ] as const) {
      const answer = await call(gw.url, method, path, { headers: globex });
      expect(answer.status, `${method} ${path}`).toBe(404);
      expect(answer.body.code).toBe('NOT_FOUND');
    }
    const still = await call(gw.url, 'GET', `/v1/admin/webhooks/${acmeEndpoint.id}`, {
      headers: asAccount('acme'),
    });
    expect(still.status).toBe(200);
    expect(receiver.received.filter((r) => r.path === '/acme')).toHaveLength(0);
  });

  it("a task of another account is never delivered to acme's endpoint", async () => {
    const globex = await call(gw.url, 'POST', '/v1/admin/webhooks', {
      headers: asAccount('globex'),
      body: { url: `${receiver.url}/globex` },
    });
    receiver.secret('/globex', globex.body.secret as string);
    const statuses = new TaskStatusStore(
      (await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks,
    );
    const traceId = newTraceId();
    await statuses.create({
      trace_id: traceId,
      account_id: 'globex',
      workflow_id: 'report',
      status: 'done',
      attempt: 1,
      updated_at: new Date().toISOString(),
    });
    await waitFor(() => receiver.received.some((r) => r.path === '/globex' && r.body.includes(traceId)), {
      timeoutMs: 15_000,
    });
    expect(receiver.received.some((r) => r.path === '/globex' && r.verified)).toBe(true);
    expect(receiver.received.filter((r) => r.path === '/acme')).toHaveLength(0);
  });

  it("another account cannot list, re-drive or drop acme's dead deliveries", async () => {
    const id = 'msg_0123456789abcdef0123456789abcdef';
    for (const [method, path] of [
      ['POST', `/v1/admin/webhooks/dead-letters/${id}/redrive`],
      ['DELETE', `/v1/admin/webhooks/dead-letters/${id}`],
    ] as const) {
      expect((await call(gw.url, method, path, { headers: asAccount('globex') })).status).toBe(404);
    }
    const listed = await call(gw.url, 'GET', '/v1/admin/webhooks/dead-letters', {
      headers: asAccount('globex'),
    });
    expect(listed.body.dead_letters).toEqual([]);
  });

  it('an account API key may not manage webhooks (the management plane is for admin and trusted callers)', async () => {
    const answer = await call(gw.url, 'GET', '/v1/admin/webhooks', {
      headers: { authorization: `Bearer ${ACME_KEY}` },
    });
    expect(answer.status).toBe(403);
  });

  it('an admin key naming no account is told to name one (400), not shown every account', async () => {
    const answer = await call(gw.url, 'GET', '/v1/admin/webhooks', { headers: admin });
    expect(answer.status).toBe(400);
    expect(answer.body.message).toMatch(/x-account-id/);
  });
});

describe('bad input to the webhook routes is a clear 4xx', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data', /cloud metadata address/],
    ['http://10.0.0.5/hook', /private address/],
    ['http://[::1]:9/hook', /loopback address/],
    ['http://127.0.0.2:9/hook', /loopback address/],
    ['http://0.0.0.0:9/hook', /unspecified address/],
    ['http://[::ffff:10.0.0.1]/hook', /private address/],
    ['http://metadata.google.internal/x', /cloud metadata host/],
  ])('a URL on a forbidden host (%s) is 400 INVALID_REQUEST naming why', async (url, reason) => {
    const answer = await call(gw.url, 'POST', '/v1/admin/webhooks', {
      headers: asAccount('acme'),
      body: { url },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(answer.body.message).toMatch(reason);
    expect(answer.body.message).toMatch(/WEBHOOK_ALLOW_HOSTS/);
  });

  it.each([
    ['an ftp URL', { url: 'ftp://example.com/hook' }, /http or https/],
    ['no URL at all', { url: 'not a url' }, /http or https/],
    ['credentials in the URL', { url: 'https://user:pw@example.com/hook' }, /credentials/],
    ['a URL of 2,100 characters', { url: `https://example.com/${'a'.repeat(2100)}` }, /url/],
    ['an unknown event', { url: 'https://example.com/hook', events: ['task.exploded'] }, /events/],
    ['an empty event list', { url: 'https://example.com/hook', events: [] }, /events/],
    ['a secret of its own', { url: 'https://example.com/hook', secret: 'whsec_mine' }, /secret/],
    ['an empty body', {}, /url/],
  ])('a body with %s is 400 INVALID_REQUEST', async (_what, body, message) => {
    const answer = await call(gw.url, 'POST', '/v1/admin/webhooks', { headers: asAccount('acme'), body });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(JSON.stringify(answer.body)).toMatch(message);
  });

  it.each([
    ['GET', '/v1/admin/webhooks/not-an-id'],
    ['DELETE', '/v1/admin/webhooks/wh_..%2F..'],
    ['POST', '/v1/admin/webhooks/dead-letters/msg_short/redrive'],
  ])('%s %s with a malformed id is 400, never a 500', async (method, path) => {
    const answer = await call(gw.url, method, path, { headers: asAccount('acme') });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
  });

  it('a rotation asking the old secret to live more than 7 days is 400', async () => {
    const answer = await call(gw.url, 'POST', `/v1/admin/webhooks/${acmeEndpoint.id}/rotate-secret`, {
      headers: asAccount('acme'),
      body: { previous_valid_for_s: 30 * 24 * 3600 },
    });
    expect(answer.status).toBe(400);
  });
});
