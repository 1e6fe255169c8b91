/**
 * Completion webhooks end to end in one gateway on a real NATS: endpoints registered through the admin API,
 * task status writes made as the executor makes them (KV `mesh_tasks`), deliveries to a loopback receiver
 * that verifies every signature with the `standardwebhooks` package.
 */
import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { newTraceId, type TaskStatusRecord } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  putSharedAgents,
  startTestGateway,
  type Json,
  type TestGateway,
} from '../__fixtures__/gateway-harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';

const ADMIN_KEY = 'admin-key-webhooks';
const asAccount = (accountId: string) => ({
  authorization: `Bearer ${ADMIN_KEY}`,
  'x-account-id': accountId,
});

let nats: NatsServer;
let gw: TestGateway;
let receiver: WebhookReceiver;
let client: NatsConnection;
let statuses: TaskStatusStore;

beforeAll(async () => {
  nats = await startNats();
  receiver = await startWebhookReceiver();
  gw = await startTestGateway(nats.url, {
    ADMIN_API_KEYS: ADMIN_KEY,
    WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
    WEBHOOK_RETRY_SCHEDULE_MS: '50,50,50',
    // Long enough that a hanging receiver holds its slots for the whole test.
    WEBHOOK_TIMEOUT_MS: '60000',
    WEBHOOK_MAX_IN_FLIGHT: '8',
    WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT: '2',
  });
  client = await connect({ servers: nats.url });
  await putSharedAgents(nats.url, 'report');
  statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks);
}, 120_000);

afterAll(async () => {
  await receiver?.close();
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

/** Registers an endpoint on the receiver's `path` and tells the receiver its secret. */
async function register(accountId: string, path: string, events?: string[]): Promise<Json> {
  const created = await call(gw.url, 'POST', '/v1/admin/webhooks', {
    headers: asAccount(accountId),
    body: { url: `${receiver.url}${path}`, ...(events ? { events } : {}) },
  });
  expect(created.status).toBe(201);
  receiver.secret(path, created.body.secret as string);
  return created.body;
}

/** Runs a task through its phases as the executor writes them, ending in `final`. */
async function finishTask(
  accountId: string,
  final: Partial<TaskStatusRecord> & Pick<TaskStatusRecord, 'status'>,
): Promise<string> {
  const traceId = newTraceId();
  const now = () => new Date().toISOString();
  await statuses.create({
    trace_id: traceId,
    account_id: accountId,
    workflow_id: 'report',
    status: 'queued',
    attempt: 0,
    updated_at: now(),
  });
  await statuses.update(
    accountId,
    traceId,
    (current) => current && { ...current, status: 'running', attempt: 1 },
  );
  await statuses.update(
    accountId,
    traceId,
    (current) => current && { ...current, ...final, updated_at: now() },
  );
  return traceId;
}

const deliveriesTo = (path: string) => receiver.received.filter((r) => r.path === path);

describe('webhook endpoints and deliveries', () => {
  it('when a task completes, its account endpoint gets one task.completed, signed (standardwebhooks verifies), thin, and the secret was shown only at creation', async () => {
    const endpoint = await register('acme', '/acme-completed');
    expect(endpoint.secret).toMatch(/^whsec_/);
    const shown = await call(gw.url, 'GET', `/v1/admin/webhooks/${endpoint.id}`, {
      headers: asAccount('acme'),
    });
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: endpoint.id, url: `${receiver.url}/acme-completed` });
    expect(shown.text).not.toContain(endpoint.secret.slice(6));
    const listed = await call(gw.url, 'GET', '/v1/admin/webhooks', { headers: asAccount('acme') });
    expect(listed.text).not.toContain(endpoint.secret.slice(6));

    const traceId = await finishTask('acme', { status: 'done' });
    await waitFor(() => deliveriesTo('/acme-completed').length >= 1, { timeoutMs: 15_000 });
    const [delivery] = deliveriesTo('/acme-completed');
    expect(delivery!.verified).toBe(true);
    expect(delivery!.id).toMatch(/^msg_[0-9a-f]{32}$/);
    const body = JSON.parse(delivery!.body) as Json;
    expect(body).toMatchObject({
      type: 'task.completed',
      data: {
        trace_id: traceId,
        account_id: 'acme',
        workflow_id: 'report',
        status: 'done',
        links: { task: `/v1/tasks/${traceId}`, events: `/v1/tasks/${traceId}/events` },
      },
    });
    // queued and running are no events: exactly one delivery for this task.
    expect(deliveriesTo('/acme-completed').filter((r) => r.body.includes(traceId))).toHaveLength(1);
  });

  it('when the receiver fails the first 2 attempts, the third gets through, each attempt with the same webhook-id and a valid signature', async () => {
    await register('retry', '/retry', ['task.failed']);
    receiver.plan('/retry', { failFirst: 2 });
    const traceId = await finishTask('retry', {
      status: 'error',
      error: { code: 'LLM_ERROR', message: 'the model answered 500' },
    });
    await waitFor(() => deliveriesTo('/retry').some((r) => r.status === 204), { timeoutMs: 15_000 });
    const attempts = deliveriesTo('/retry');
    expect(attempts.map((r) => r.status)).toEqual([500, 500, 204]);
    expect(new Set(attempts.map((r) => r.id)).size).toBe(1);
    expect(attempts.every((r) => r.verified)).toBe(true);
    expect(JSON.parse(attempts[2]!.body)).toMatchObject({
      type: 'task.failed',
      data: { trace_id: traceId, error: { code: 'LLM_ERROR', message: 'the model answered 500' } },
    });
  });

  it('when every attempt fails, the delivery becomes a dead letter; a re-drive delivers it with the same webhook-id', async () => {
    await register('dead', '/dead');
    receiver.plan('/dead', { failFirst: 4 });
    await finishTask('dead', { status: 'cancelled' });
    const letters = await waitFor(
      async () => {
        const listed = await call(gw.url, 'GET', '/v1/admin/webhooks/dead-letters', {
          headers: asAccount('dead'),
        });
        return listed.body.dead_letters.length === 1 ? listed.body.dead_letters : undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(letters[0]).toMatchObject({ type: 'task.cancelled', attempts: 4 });
    expect(letters[0].reason).toMatch(/no success after 4 attempts; last: HTTP 500/);
    expect(deliveriesTo('/dead')).toHaveLength(4);

    const redriven = await call(
      gw.url,
      'POST',
      `/v1/admin/webhooks/dead-letters/${letters[0].webhook_id}/redrive`,
      {
        headers: asAccount('dead'),
      },
    );
    expect(redriven.status).toBe(202);
    await waitFor(() => deliveriesTo('/dead').some((r) => r.status === 204), { timeoutMs: 15_000 });
    expect(new Set(deliveriesTo('/dead').map((r) => r.id))).toEqual(new Set([letters[0].webhook_id]));
    const after = await call(gw.url, 'GET', '/v1/admin/webhooks/dead-letters', {
      headers: asAccount('dead'),
    });
    expect(after.body.dead_letters).toEqual([]);
  });

  it("when one account's receiver hangs, another account's deliveries still go through, and the hanging one holds at most its own slots", async () => {
    await register('slow', '/slow');
    receiver.plan('/slow', { hang: true });
    await register('fast', '/fast');
    for (let i = 0; i < 6; i++) await finishTask('slow', { status: 'done' });
    await waitFor(() => receiver.hanging() >= 2, { timeoutMs: 15_000 });
    const fastTraces = [];
    for (let i = 0; i < 3; i++) fastTraces.push(await finishTask('fast', { status: 'done' }));
    await waitFor(() => deliveriesTo('/fast').filter((r) => r.status === 204).length >= 3, {
      timeoutMs: 15_000,
    });
    for (const traceId of fastTraces) {
      expect(deliveriesTo('/fast').some((r) => r.body.includes(traceId) && r.verified)).toBe(true);
    }
    // WEBHOOK_MAX_IN_FLIGHT_PER_ACCOUNT=2: the other four wait in the stream, not in sockets.
    expect(receiver.maxHanging('/slow')).toBe(2);
  });

  it('when a task waits for approval, task.approval_requested goes to endpoints subscribed to it only', async () => {
    await register('approvals', '/approvals-all');
    await register('approvals', '/approvals-final-only', ['task.completed']);
    const traceId = await finishTask('approvals', { status: 'waiting_approval' });
    await statuses.update('approvals', traceId, (current) => current && { ...current, status: 'done' });
    await waitFor(() => deliveriesTo('/approvals-final-only').length >= 1, { timeoutMs: 15_000 });
    await waitFor(() => deliveriesTo('/approvals-all').length >= 2, { timeoutMs: 15_000 });
    const types = (path: string) =>
      deliveriesTo(path).map((r) => (JSON.parse(r.body) as Json).type as string);
    expect(types('/approvals-all').sort()).toEqual(['task.approval_requested', 'task.completed']);
    expect(types('/approvals-final-only')).toEqual(['task.completed']);
  });

  it('a rotated secret is shown once; deliveries then carry signatures under the new and the old secret', async () => {
    const endpoint = await register('rotate', '/rotate');
    const rotated = await call(gw.url, 'POST', `/v1/admin/webhooks/${endpoint.id}/rotate-secret`, {
      headers: asAccount('rotate'),
      body: { previous_valid_for_s: 3600 },
    });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    receiver.secret('/rotate', rotated.body.secret as string);
    const ping = await call(gw.url, 'POST', `/v1/admin/webhooks/${endpoint.id}/test`, {
      headers: asAccount('rotate'),
    });
    expect(ping.body).toMatchObject({ delivered: true, status: 204 });
    const [received] = deliveriesTo('/rotate');
    expect(received!.verified).toBe(true);
    expect(received!.signature.split(' ')).toHaveLength(2);
    expect(JSON.parse(received!.body)).toMatchObject({ type: 'webhook.test' });
  });

  it('a deleted endpoint gets nothing more', async () => {
    const endpoint = await register('deleted', '/deleted');
    const removed = await call(gw.url, 'DELETE', `/v1/admin/webhooks/${endpoint.id}`, {
      headers: asAccount('deleted'),
    });
    expect(removed.status).toBe(204);
    await register('deleted', '/deleted-witness');
    await finishTask('deleted', { status: 'done' });
    await waitFor(() => deliveriesTo('/deleted-witness').length >= 1, { timeoutMs: 15_000 });
    expect(deliveriesTo('/deleted')).toHaveLength(0);
  });

  it("a task submitted with its own webhook on a registered endpoint's origin gets its events there too, signed with that endpoint's secret; the endpoint gets its own delivery", async () => {
    const endpoint = await register('own', '/own-endpoint', ['task.completed']);
    receiver.secret('/own-task-hook?job=42', endpoint.secret as string);
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      headers: asAccount('own'),
      body: {
        workflow_id: 'report',
        user_id: 'u1',
        messages: [{ role: 'user', content: 'go' }],
        webhook: { url: `${receiver.url}/own-task-hook?job=42`, events: ['task.completed'] },
      },
    });
    expect(submitted.status).toBe(202);
    const traceId = submitted.body.trace_id as string;
    await statuses.update(
      'own',
      traceId,
      (current) => current && { ...current, status: 'running', attempt: 1 },
    );
    await statuses.update('own', traceId, (current) => current && { ...current, status: 'done' });

    await waitFor(
      () => deliveriesTo('/own-task-hook?job=42').length >= 1 && deliveriesTo('/own-endpoint').length >= 1,
      {
        timeoutMs: 15_000,
      },
    );
    const [own] = deliveriesTo('/own-task-hook?job=42');
    const [registered] = deliveriesTo('/own-endpoint');
    expect(own!.verified).toBe(true);
    expect(JSON.parse(own!.body)).toMatchObject({ type: 'task.completed', data: { trace_id: traceId } });
    expect(own!.id).not.toBe(registered!.id);
  });

  it("a task's webhook on an origin no endpoint of its account registered is 400, and nothing is queued for it", async () => {
    await register('own-refused', '/refused-endpoint');
    const before = await call(gw.url, 'GET', '/v1/tasks', { headers: asAccount('own-refused') });
    for (const url of [
      'https://elsewhere.example.com/hook',
      `${receiver.url.replace('127.0.0.1', 'localhost')}/x`,
    ]) {
      const answer = await call(gw.url, 'POST', '/v1/tasks', {
        headers: asAccount('own-refused'),
        body: {
          workflow_id: 'report',
          user_id: 'u1',
          messages: [{ role: 'user', content: 'go' }],
          webhook: { url },
        },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe('INVALID_REQUEST');
      expect(answer.body.message).toMatch(/registered webhook endpoints/);
    }
    const after = await call(gw.url, 'GET', '/v1/tasks', { headers: asAccount('own-refused') });
    expect(after.body.tasks).toEqual(before.body.tasks);
  });

  it('a final status written twice (or read twice) is delivered once', async () => {
    await register('twice', '/twice');
    const traceId = await finishTask('twice', { status: 'done' });
    await statuses.update(
      'twice',
      traceId,
      (current) => current && { ...current, updated_at: new Date().toISOString() },
    );
    const witness = await finishTask('twice', { status: 'done' });
    await waitFor(() => deliveriesTo('/twice').some((r) => r.body.includes(witness)), { timeoutMs: 15_000 });
    // Every queued delivery of the account done (the work queue drops each once acknowledged): no second
    // one of the first task is on its way.
    const jsm = await jetstreamManager(client);
    await waitFor(
      async () => {
        const info = await jsm.streams.info('MESH_WEBHOOKS', {
          subjects_filter: 'mesh.webhooks.deliver.twice',
        });
        return info.state.subjects?.['mesh.webhooks.deliver.twice'] === undefined;
      },
      { timeoutMs: 15_000 },
    );
    expect(deliveriesTo('/twice').filter((r) => r.body.includes(traceId))).toHaveLength(1);
  });
});
