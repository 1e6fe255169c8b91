import {
  cancelSubject,
  httpStatusOf,
  CancelSignal,
  ReceivedTask,
  Streams,
  TaskStatusRecord,
  taskEventsSubject,
  taskReceivedSubject,
} from '@agentmesh/protocol';
import {
  decodeJson,
  ensureMeshStreams,
  openMeshBuckets,
  requestTaskCancel,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from './json-body.js';
import { settledTaskStatus } from './task-lookup.js';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-6f1e2d3c4b5a69788796';
const BETA_KEY = 'beta-key-0a1b2c3d4e5f60718293';
const ADMIN_KEY = 'admin-key-99aa88bb77cc66dd55ee';
const BODY_LIMIT = 16 * 1024;

let telemetry: Telemetry;
let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  // The real SDK, as services run it: spans get real ids and traceparent reaches message headers.
  telemetry = startTelemetry({ service: 'gateway-test', env: {} });
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme:user,${BETA_KEY}=beta`,
    ADMIN_API_KEYS: ADMIN_KEY,
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
  });
  await putSharedAgents(nats.url, 'qcc_agent', 'w');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
  await telemetry?.shutdown();
});

const submission = (extra: Record<string, unknown> = {}) => ({
  workflow_id: 'qcc_agent',
  user_id: 'user-1',
  messages: [{ role: 'user', content: 'look up ByteDance' }],
  ...extra,
});

/** Acts as a dedicated account, so each test has its own received-task subject. */
const asAccount = (account: string) => ({ ...bearer(ADMIN_KEY), 'x-account-id': account });

async function storedTasks(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function lastStoredTask(account: string) {
  const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
    last_by_subj: taskReceivedSubject(account),
  });
  return { task: decodeJson(ReceivedTask, stored!.data, 'test'), headers: stored!.header };
}

describe('submitting a task', () => {
  it('with an API key, the task is accepted with 202 and its ReceivedTask is on JetStream with Nats-Msg-Id = <account>.<trace_id> and the task trace context', async () => {
    const res = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ variables: { page: 2 } }),
      headers: bearer(ACME_KEY),
    });
    expect(res.status).toBe(202);
    const traceId: string = res.body.trace_id;
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(res.body).toEqual({
      trace_id: traceId,
      events_subject: taskEventsSubject('acme', traceId),
      events_url: `/v1/tasks/${traceId}/events`,
      stream_token: expect.any(String),
    });

    const { task, headers } = await lastStoredTask('acme');
    expect(task.task_meta).toMatchObject({
      trace_id: traceId,
      account_id: 'acme',
      account_type: 'user',
      workflow_id: 'qcc_agent',
      user_id: 'user-1',
    });
    expect(task.input).toEqual({ messages: submission().messages, variables: { page: 2 } });
    expect(task.runtime_config).toBeUndefined();
    expect(headers.get('Nats-Msg-Id')).toBe(`acme.${traceId}`);
    expect(headers.get('traceparent')).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
  });

  it('seed 002 alias /v1/run_workflow accepts the same body, and an upstream UUID trace id is normalised and kept', async () => {
    const uuid = '3F2B8C1E-9D4A-4E6B-8F1C-2A7D5E9B0C13';
    const res = await call(gw.url, 'POST', '/v1/run_workflow', {
      body: submission({ trace_id: uuid, user_id: 10086 }),
      headers: asAccount('alias-acct'),
    });
    expect(res.status).toBe(202);
    expect(res.body.trace_id).toBe('3f2b8c1e9d4a4e6b8f1c2a7d5e9b0c13');
    const { task } = await lastStoredTask('alias-acct');
    expect(task.task_meta).toMatchObject({ trace_id: res.body.trace_id, user_id: '10086' });
  });

  it.each([
    ['messages are missing', submission({ messages: undefined }), 'messages'],
    [
      'a message has an unknown role',
      submission({ messages: [{ role: 'wizard', content: 'x' }] }),
      'messages[0]',
    ],
    ['the trace id is not hex', submission({ trace_id: 'not-a-trace-id' }), 'trace_id'],
    ['the workflow id has a space', submission({ workflow_id: 'qcc agent' }), 'workflow_id'],
    ['variables is not an object', submission({ variables: [1, 2] }), 'variables'],
  ])(
    'when %s, the answer is 400 INVALID_REQUEST naming the path and nothing is queued',
    async (_case, body, path) => {
      const account = `bad-${path.replace(/\W/g, '')}`;
      const res = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('INVALID_REQUEST');
      expect(res.body.message).toContain(path);
      expect(res.body.detail.issues.map((issue: { path: string }) => issue.path).join(' ')).toContain(path);
      expect(await storedTasks(account)).toBe(0);
    },
  );

  it('a body that is not JSON is 400, one not sent as JSON is 415, and an unknown route is 404, all with the error body', async () => {
    const notJson = await call(gw.url, 'POST', '/v1/tasks', {
      body: '{"workflow_id":',
      headers: bearer(ACME_KEY),
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body).toMatchObject({ code: 'INVALID_REQUEST', message: expect.stringContaining('JSON') });
    const xml = await call(gw.url, 'POST', '/v1/tasks', {
      body: '<task/>',
      headers: { ...bearer(ACME_KEY), 'content-type': 'application/xml' },
    });
    expect(xml.status).toBe(415);
    expect(xml.body).toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('content type'),
    });
    const missing = await call(gw.url, 'GET', '/v1/nothing-here');
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('/v1/nothing-here'),
    });
  });

  /** A submission whose deepest nesting of objects and arrays is `depth` levels (the body is level 1). */
  const nestedBody = (depth: number, extra = '') =>
    `{"workflow_id":"qcc_agent","user_id":"u","messages":[{"role":"user","content":"x"}]${extra},` +
    `"variables":{"deep":${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}}}`;

  it(`a body nested ${MAX_JSON_DEPTH} levels deep is accepted, and one nested ${MAX_JSON_DEPTH + 1} levels is 400 INVALID_REQUEST`, async () => {
    const deepest = await call(gw.url, 'POST', '/v1/tasks', {
      body: nestedBody(MAX_JSON_DEPTH),
      headers: asAccount('depth-ok'),
    });
    expect(deepest.status).toBe(202);
    const deeper = await call(gw.url, 'POST', '/v1/tasks', {
      body: nestedBody(MAX_JSON_DEPTH + 1),
      headers: asAccount('depth-over'),
    });
    expect(deeper.status).toBe(400);
    expect(deeper.body).toEqual({
      code: 'INVALID_REQUEST',
      message: `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
      detail: { max_depth: MAX_JSON_DEPTH },
    });
    expect(await storedTasks('depth-over')).toBe(0);
  });

  it('a body nested 5,000 levels deep is 400 INVALID_REQUEST, and nothing is claimed, stored or queued', async () => {
    const account = 'depth-attack';
    const traceId = '7a'.repeat(16);
    const body = nestedBody(5_000, `,"idempotency_key":"deep-1","trace_id":"${traceId}"`);
    const res = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'INVALID_REQUEST',
      message: expect.stringContaining('levels deep'),
    });
    expect(await storedTasks(account)).toBe(0);
    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: asAccount(account) });
    expect(status.status).toBe(404);
    // The key was not claimed: a proper request with it queues its own trace id.
    const proper = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ idempotency_key: 'deep-1', trace_id: 'b7'.repeat(16) }),
      headers: asAccount(account),
    });
    expect(proper.status).toBe(202);
    expect(proper.body.trace_id).toBe('b7'.repeat(16));
  });

  it('a body over the limit is refused with 413 PAYLOAD_TOO_LARGE and the error body', async () => {
    const huge = submission({ messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT + 1) }] });
    const res = await call(gw.url, 'POST', '/v1/tasks', { body: huge, headers: asAccount('too-large') });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({
      code: 'PAYLOAD_TOO_LARGE',
      message: `request body exceeds ${BODY_LIMIT} bytes`,
      detail: { limit_bytes: BODY_LIMIT },
    });
    expect(await storedTasks('too-large')).toBe(0);
  });
});

describe('authentication', () => {
  it.each([
    ['no key at all', 401, 'UNAUTHORIZED', {}],
    ['an unknown key', 401, 'UNAUTHORIZED', bearer('not-a-key-000000000000000')],
    ['a Basic authorization', 401, 'UNAUTHORIZED', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['account headers while they are not trusted', 401, 'UNAUTHORIZED', { 'x-account-id': 'acme' }],
    [
      'a key of acme claiming account beta',
      403,
      'FORBIDDEN',
      { ...bearer(ACME_KEY), 'x-account-id': 'beta' },
    ],
    ['an admin key naming no account', 401, 'UNAUTHORIZED', bearer(ADMIN_KEY)],
  ])('a submission with %s is refused with %i %s', async (_case, status, code, headers) => {
    const res = await call(gw.url, 'POST', '/v1/tasks', { body: submission(), headers });
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ code, message: expect.any(String) });
  });

  it('the x-api-key header works like a bearer token', async () => {
    const res = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: { 'x-api-key': BETA_KEY },
    });
    expect(res.status).toBe(202);
    expect(res.body.events_subject).toBe(taskEventsSubject('beta', res.body.trace_id));
  });

  it('an API key caller may neither submit a pre-assembled payload nor use the management plane', async () => {
    const preAssembled = await call(gw.url, 'POST', '/v1/tasks', {
      body: { task_meta: { workflow_id: 'w', user_id: 'u' }, input: { messages: [] }, runtime_config: {} },
      headers: bearer(ACME_KEY),
    });
    expect(preAssembled.status).toBe(403);
    expect(preAssembled.body.code).toBe('FORBIDDEN');
    const admin = await call(gw.url, 'GET', '/v1/admin/agents', { headers: bearer(ACME_KEY) });
    expect(admin.status).toBe(403);
    expect(admin.body.code).toBe('FORBIDDEN');
  });
});

/** A submit reply without its stream token, which is issued afresh (with its own expiry) on each answer. */
function withoutToken(reply: Record<string, unknown>): Record<string, unknown> {
  const { stream_token: token, ...rest } = reply;
  expect(token).toEqual(expect.any(String));
  return rest;
}

describe('idempotency', () => {
  it('the same key twice from one account gives the same trace_id and exactly one message on the stream', async () => {
    const account = 'idem-acct';
    const body = submission({ idempotency_key: 'order-42' });
    const first = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    const second = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(first.status).toBe(202);
    expect(second.status).toBe(202);
    expect(withoutToken(second.body)).toEqual(withoutToken(first.body));
    expect(await storedTasks(account)).toBe(1);

    const other = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount('idem-other') });
    expect(other.status).toBe(202);
    expect(other.body.trace_id).not.toBe(first.body.trace_id);
  });

  it('the same key with another body is 422 IDEMPOTENCY_KEY_REUSED and queues nothing; the first body again still answers the first task', async () => {
    const account = 'idem-reuse';
    const body = submission({ idempotency_key: 'order-77' });
    const first = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(first.status).toBe(202);

    const changed = await call(gw.url, 'POST', '/v1/tasks', {
      body: { ...body, messages: [{ role: 'user', content: 'look up Alibaba instead' }] },
      headers: asAccount(account),
    });
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({
      code: 'IDEMPOTENCY_KEY_REUSED',
      message: expect.stringContaining('idempotency_key'),
    });
    expect(changed.text).not.toContain(first.body.trace_id);
    expect(await storedTasks(account)).toBe(1);

    // The same request with its fields in another order is the same request.
    const reordered = {
      idempotency_key: 'order-77',
      messages: body.messages,
      user_id: 'user-1',
      workflow_id: 'qcc_agent',
    };
    const again = await call(gw.url, 'POST', '/v1/tasks', { body: reordered, headers: asAccount(account) });
    expect(again.status).toBe(202);
    expect(withoutToken(again.body)).toEqual(withoutToken(first.body));
    expect(await storedTasks(account)).toBe(1);
  });

  it('a trace_id another account already uses is neither revealed nor claimed: each account gets its own task', async () => {
    const traceId = 'ab'.repeat(16);
    const first = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ trace_id: traceId }),
      headers: asAccount('owner-acct'),
    });
    expect(first.status).toBe(202);
    const clash = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ trace_id: traceId }),
      headers: asAccount('thief-acct'),
    });
    // Answered exactly like a fresh trace id: nothing says the id exists elsewhere.
    expect(clash.status).toBe(202);
    expect(clash.body.trace_id).toBe(traceId);
    expect(clash.body.events_subject).toBe(taskEventsSubject('thief-acct', traceId));
    expect(await storedTasks('thief-acct')).toBe(1);
    expect(await storedTasks('owner-acct')).toBe(1);
    const owners = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: asAccount('owner-acct') });
    expect(owners.body.account_id).toBe('owner-acct');
    const thiefs = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: asAccount('thief-acct') });
    expect(thiefs.body.account_id).toBe('thief-acct');
    // A cancel by one account reaches only its own task.
    await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, { headers: asAccount('thief-acct') });
    const after = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: asAccount('owner-acct') });
    expect(after.body.cancel_requested_at).toBeUndefined();
  });
});

describe('task status and cancellation', () => {
  it('the status of a new task is queued for its account and not found for any other', async () => {
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = submitted.body.trace_id;
    const mine = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(mine.status).toBe(200);
    expect(TaskStatusRecord.parse(mine.body)).toMatchObject({
      trace_id: traceId,
      account_id: 'acme',
      workflow_id: 'qcc_agent',
      status: 'queued',
      attempt: 0,
    });
    const theirs = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(BETA_KEY) });
    expect(theirs.status).toBe(404);
    expect(theirs.body.code).toBe('NOT_FOUND');
    const unknown = await call(gw.url, 'GET', `/v1/tasks/${'cd'.repeat(16)}`, { headers: bearer(ACME_KEY) });
    expect(unknown.status).toBe(404);
    const malformed = await call(gw.url, 'GET', '/v1/tasks/nope', { headers: bearer(ACME_KEY) });
    expect(malformed.status).toBe(400);
  });

  it('a cancel sets cancel_requested_at and publishes a CancelSignal on the task cancel subject', async () => {
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = submitted.body.trace_id;
    const signals = client.subscribe(cancelSubject('acme', traceId), { max: 1 });
    await client.flush();

    const res = await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, {
      body: { reason: 'user pressed stop' },
      headers: bearer(ACME_KEY),
    });
    expect(res.status).toBe(202);
    expect(res.body.cancel_requested_at).toEqual(expect.any(String));

    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(status.body.cancel_requested_at).toBe(res.body.cancel_requested_at);
    for await (const msg of signals) {
      expect(decodeJson(CancelSignal, msg.data, 'test')).toEqual({
        account_id: 'acme',
        trace_id: traceId,
        requested_at: res.body.cancel_requested_at,
        reason: 'user pressed stop',
      });
      expect(msg.headers?.get('traceparent')).toContain(traceId);
    }
    expect(signals.getProcessed()).toBe(1);

    const byOther = await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, { headers: bearer(BETA_KEY) });
    expect(byOther.status).toBe(404);
  });

  it('cancelling a task that has already ended is a 409 CONFLICT', async () => {
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = submitted.body.trace_id;
    const statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client))).tasks);
    await statuses.update('acme', traceId, (current) => ({ ...current!, status: 'done', attempt: 1 }));
    await waitFor(async () => (await statuses.get('acme', traceId))?.status === 'done');

    const res = await call(gw.url, 'POST', `/v1/tasks/${traceId}/cancel`, { headers: bearer(ACME_KEY) });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: 'CONFLICT', detail: { status: 'done' } });
  });
  it("a task whose terminal event is stored before its status record says so reads as ended, with the event's error", async () => {
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = submitted.body.trace_id;
    const statuses = new TaskStatusStore((await openMeshBuckets(jetstream(client))).tasks);
    await statuses.update('acme', traceId, (current) => ({ ...current!, status: 'running', attempt: 2 }));
    // The attempt stored its terminal event and has not written its final status yet (or died first).
    const writer = await TaskEventWriter.open(jetstream(client), jsm, {
      accountId: 'acme',
      traceId,
      attempt: 2,
    });
    await writer.emit('message_chunk', { delta: 'partial' });
    await writer.emit('error', { code: 'TOOL_ERROR', message: 'the lookup failed', retryable: false });

    const res = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(res.status).toBe(200);
    expect(TaskStatusRecord.parse(res.body)).toMatchObject({
      trace_id: traceId,
      status: 'error',
      attempt: 2,
      last_seq: 2,
      error: { code: 'TOOL_ERROR', message: 'the lookup failed', retryable: false },
    });
    // The record itself is the executor's to write; reading through it changes nothing.
    expect((await statuses.get('acme', traceId))?.status).toBe('running');
  });
  it('when a cancel and the terminal event it caused land between the read of the record and the read of the last event, the answer says cancelled with cancel_requested_at', async () => {
    const submitted = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission(),
      headers: bearer(ACME_KEY),
    });
    const traceId: string = submitted.body.trace_id;
    const buckets = await openMeshBuckets(jetstream(client));
    const statuses = new TaskStatusStore(buckets.tasks);
    await statuses.update('acme', traceId, (current) => ({ ...current!, status: 'running', attempt: 1 }));
    /** A store whose first read is followed, before the lookup goes on, by the cancel and the attempt's end. */
    class CancelledAfterFirstRead extends TaskStatusStore {
      #reads = 0;
      override async get(accountId: string, id: string) {
        const record = await super.get(accountId, id);
        if (this.#reads++ === 0) {
          await requestTaskCancel(client, statuses, { accountId, traceId: id });
          const writer = await TaskEventWriter.open(jetstream(client), jsm, {
            accountId,
            traceId: id,
            attempt: 1,
          });
          await writer.emit('error', {
            code: 'CANCELLED',
            message: 'the task was cancelled',
            retryable: false,
          });
        }
        return record;
      }
    }

    const answer = await settledTaskStatus(new CancelledAfterFirstRead(buckets.tasks), jsm, traceId, 'acme');
    expect(answer).toMatchObject({
      status: 'cancelled',
      cancel_requested_at: expect.any(String),
      error: { code: 'CANCELLED' },
    });
  });
});

describe('when the task stream is unreachable', () => {
  it('the submission is 503 SERVICE_UNAVAILABLE, and repeating it with the same key once the stream is back queues it under the same trace_id', async () => {
    const account = 'no-stream-acct';
    const body = submission({ idempotency_key: 'retry-me' });
    await jsm.streams.delete(Streams.TASKS.name);
    try {
      const failed = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
      expect(failed.status).toBe(httpStatusOf('SERVICE_UNAVAILABLE'));
      expect(failed.body.code).toBe('SERVICE_UNAVAILABLE');
    } finally {
      await ensureMeshStreams(jsm);
    }
    const retried = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(retried.status).toBe(202);
    expect(await storedTasks(account)).toBe(1);
    const { task } = await lastStoredTask(account);
    expect(task.task_meta.trace_id).toBe(retried.body.trace_id);
    const status = await call(gw.url, 'GET', `/v1/tasks/${retried.body.trace_id}`, {
      headers: asAccount(account),
    });
    expect(status.body).toMatchObject({ status: 'queued', attempt: 0 });
    expect(status.body.error).toBeUndefined();
  });
});

describe('when a gateway died between queuing a task and publishing it', () => {
  /** What the dead gateway left: the task's status `queued`, and nothing on the stream. */
  async function leftQueued(account: string, traceId: string, queuedAgoMs: number): Promise<void> {
    const { tasks } = await openMeshBuckets(jetstream(client));
    const at = new Date(Date.now() - queuedAgoMs).toISOString();
    const created = await new TaskStatusStore(tasks).create({
      trace_id: traceId,
      account_id: account,
      workflow_id: 'qcc_agent',
      status: 'queued',
      attempt: 0,
      submitted_at: at,
      updated_at: at,
    });
    expect(created).toBe(true);
  }

  it('the upstream repeating it publishes it once, and repeating it again adds nothing to the stream', async () => {
    const account = 'crashed-gw-acct';
    const traceId = '5d1c0e8f2b7a49c6a3e4f5061728394a';
    await leftQueued(account, traceId, 1_000);
    expect(await storedTasks(account)).toBe(0);

    const body = submission({ trace_id: traceId });
    const repeated = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(repeated.status).toBe(202);
    expect(repeated.body.trace_id).toBe(traceId);
    expect(await storedTasks(account)).toBe(1);
    const { task } = await lastStoredTask(account);
    expect(task.task_meta.trace_id).toBe(traceId);

    const again = await call(gw.url, 'POST', '/v1/tasks', { body, headers: asAccount(account) });
    expect(again.status).toBe(202);
    expect(await storedTasks(account)).toBe(1);
  });

  it('a repeat after the stream would no longer drop a copy publishes nothing, so the task cannot run twice', async () => {
    const account = 'stale-queued-acct';
    const traceId = '6e2d1f903c8b4ad7b4f5061728394a5b';
    const windowMs = (await jsm.streams.info(Streams.TASKS.name)).config.duplicate_window / 1_000_000;
    await leftQueued(account, traceId, windowMs);

    const repeated = await call(gw.url, 'POST', '/v1/tasks', {
      body: submission({ trace_id: traceId }),
      headers: asAccount(account),
    });
    expect(repeated.status).toBe(202);
    expect(repeated.body.trace_id).toBe(traceId);
    expect(await storedTasks(account)).toBe(0);
  });
});
