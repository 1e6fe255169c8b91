import { openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  accountSubmitSubject,
  ErrorBody,
  newTraceId,
  ReceivedTask,
  Streams,
  Subjects,
  SubmitTaskReply,
  TASK_PARENT_HEADER,
  taskEventsSubject,
  taskReceivedSubject,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from './json-body.js';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-nats-1234567890abcdef';
const BODY_LIMIT = 8 * 1024;

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme`,
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
  });
  await putSharedAgents(nats.url, 'qcc_agent');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const submission = (extra: Record<string, unknown> = {}) => ({
  workflow_id: 'qcc_agent',
  user_id: 'u-1',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

async function request(
  body: unknown,
  headerValues: Record<string, string> = {},
  subject: string = Subjects.GATEWAY_SUBMIT,
): Promise<unknown> {
  const headers = natsHeaders();
  for (const [name, value] of Object.entries(headerValues)) headers.set(name, value);
  const payload = typeof body === 'string' ? body : JSON.stringify(body);
  const reply = await client.request(subject, payload, { timeout: 5_000, headers });
  return reply.json();
}

async function storedCount(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('NATS ingress mesh.gateway.submit', () => {
  it('a request naming its account in headers is queued and answered with the submit reply', async () => {
    const reply = SubmitTaskReply.parse(await request(submission(), { 'x-account-id': 'nats-upstream' }));
    expect(reply.events_subject).toBe(taskEventsSubject('nats-upstream', reply.trace_id));
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskReceivedSubject('nats-upstream'),
    });
    expect(stored!.header.get('Nats-Msg-Id')).toBe(`nats-upstream.${reply.trace_id}`);
  });

  it('a request with a bearer API key acts for the key account, and an unknown key is UNAUTHORIZED', async () => {
    const reply = SubmitTaskReply.parse(await request(submission(), { authorization: `Bearer ${ACME_KEY}` }));
    expect(reply.events_subject).toBe(taskEventsSubject('acme', reply.trace_id));
    expect(
      ErrorBody.parse(await request(submission(), { authorization: 'Bearer nope-nope-nope' })),
    ).toMatchObject({
      code: 'UNAUTHORIZED',
    });
    expect(ErrorBody.parse(await request(submission()))).toMatchObject({ code: 'UNAUTHORIZED' });
  });

  it.each([
    ['messages missing', submission({ messages: undefined }), 'INVALID_REQUEST', 'messages'],
    ['not JSON', '{"workflow_id"', 'INVALID_REQUEST', 'JSON'],
    [
      'over the body limit',
      submission({ messages: [{ role: 'user', content: 'x'.repeat(BODY_LIMIT) }] }),
      'PAYLOAD_TOO_LARGE',
      `${BODY_LIMIT}`,
    ],
  ])('a request with %s gets a %s error body and nothing is queued', async (_case, body, code, mention) => {
    const account = `nats-bad-${code.toLowerCase().replaceAll('_', '-')}`;
    const reply = ErrorBody.parse(await request(body, { 'x-account-id': account }));
    expect(reply.code).toBe(code);
    expect(reply.message).toContain(mention);
    expect(await storedCount(account)).toBe(0);
  });

  it('a request nested 3,000 levels deep gets an INVALID_REQUEST error body, and nothing is claimed or queued', async () => {
    const account = 'nats-deep';
    const deep =
      `{"workflow_id":"w","user_id":"u","messages":[{"role":"user","content":"x"}],"idempotency_key":"deep-2",` +
      `"trace_id":"${'d9'.repeat(16)}",` +
      `"variables":{"deep":${'['.repeat(3_000)}${']'.repeat(3_000)}}}`;
    const reply = ErrorBody.parse(await request(deep, { 'x-account-id': account }));
    expect(reply).toEqual({
      code: 'INVALID_REQUEST',
      message: `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
      detail: { max_depth: MAX_JSON_DEPTH },
    });
    expect(await storedCount(account)).toBe(0);
    // The key was not claimed: a proper request with it queues its own trace id.
    const proper = SubmitTaskReply.parse(
      await request(submission({ idempotency_key: 'deep-2', trace_id: 'c8'.repeat(16) }), {
        'x-account-id': account,
      }),
    );
    expect(proper.trace_id).toBe('c8'.repeat(16));
  });

  it('an idempotency key reused over NATS with another body gets IDEMPOTENCY_KEY_REUSED and nothing more is queued', async () => {
    const account = 'nats-reuse';
    SubmitTaskReply.parse(await request(submission({ idempotency_key: 'k-1' }), { 'x-account-id': account }));
    const reply = ErrorBody.parse(
      await request(submission({ idempotency_key: 'k-1', user_id: 'someone-else' }), {
        'x-account-id': account,
      }),
    );
    expect(reply.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await storedCount(account)).toBe(1);
  });

  it('an idempotency key used over HTTP and then over NATS gives one trace_id and one queued task', async () => {
    const body = submission({ idempotency_key: 'cross-ingress-1' });
    const overHttp = await call(gw.url, 'POST', '/v1/tasks', { body, headers: bearer(ACME_KEY) });
    expect(overHttp.status).toBe(202);
    const before = await storedCount('acme');
    const overNats = SubmitTaskReply.parse(await request(body, { 'x-api-key': ACME_KEY }));
    // The same reply, but for the stream token, which only HTTP callers (browsers) get.
    const { stream_token: streamToken, ...sameReply } = overHttp.body;
    expect(streamToken).toEqual(expect.any(String));
    expect(overNats).toEqual(sameReply);
    expect(await storedCount('acme')).toBe(before);
  });
});

describe('NATS ingress mesh.gateway.submit.<account>', () => {
  it('a request without any header is queued for the account the subject names', async () => {
    const reply = SubmitTaskReply.parse(
      await request(submission(), {}, accountSubmitSubject('nats-confined')),
    );
    expect(reply.events_subject).toBe(taskEventsSubject('nats-confined', reply.trace_id));
    expect(await storedCount('nats-confined')).toBe(1);
  });

  it('when x-account-id names another account than the subject, it is FORBIDDEN and nothing is queued', async () => {
    const reply = ErrorBody.parse(
      await request(submission(), { 'x-account-id': 'nats-victim' }, accountSubmitSubject('nats-intruder')),
    );
    expect(reply).toMatchObject({ code: 'FORBIDDEN' });
    expect(reply.message).toContain('x-account-id');
    expect(await storedCount('nats-victim')).toBe(0);
    expect(await storedCount('nats-intruder')).toBe(0);
  });

  it("when an API key of another account is presented on an account's subject, it is FORBIDDEN; on its own account's subject it works", async () => {
    const before = await storedCount('acme');
    const refused = ErrorBody.parse(
      await request(
        submission(),
        { authorization: `Bearer ${ACME_KEY}` },
        accountSubmitSubject('nats-other'),
      ),
    );
    expect(refused).toMatchObject({ code: 'FORBIDDEN' });
    expect(await storedCount('nats-other')).toBe(0);

    const accepted = SubmitTaskReply.parse(
      await request(submission(), { authorization: `Bearer ${ACME_KEY}` }, accountSubmitSubject('acme')),
    );
    expect(accepted.events_subject).toBe(taskEventsSubject('acme', accepted.trace_id));
    expect(await storedCount('acme')).toBe(before + 1);
  });

  it('an unknown API key on an account subject is UNAUTHORIZED', async () => {
    const reply = ErrorBody.parse(
      await request(submission(), { 'x-api-key': 'nope-nope-nope' }, accountSubmitSubject('acme')),
    );
    expect(reply.code).toBe('UNAUTHORIZED');
  });
});

describe('sub-tasks on the NATS ingress', () => {
  const parentLink = () => {
    const root = newTraceId();
    return { trace_id: newTraceId(), call_id: 'call_1_0', root_trace_id: root, depth: 2 };
  };

  it('when an executor submits a sub-task on the trusted subject, its task carries the parent link and its status names the parent; the same sub-task again is answered as a repeat and queued once', async () => {
    const account = 'nats-subtasks';
    const parent = parentLink();
    const traceId = newTraceId();
    const headers = { 'x-account-id': account, [TASK_PARENT_HEADER]: JSON.stringify(parent) };

    const reply = SubmitTaskReply.parse(await request(submission({ trace_id: traceId }), headers));
    const again = SubmitTaskReply.parse(await request(submission({ trace_id: traceId }), headers));

    expect(again.trace_id).toBe(reply.trace_id);
    expect(await storedCount(account)).toBe(1);
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskReceivedSubject(account),
    });
    expect(ReceivedTask.parse(stored!.json()).task_meta.parent).toEqual(parent);
    const statuses = new TaskStatusStore(
      (await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks,
    );
    expect(await statuses.get(account, reply.trace_id)).toMatchObject({
      status: 'queued',
      parent_trace_id: parent.trace_id,
    });
  });

  it("when a tenant sends a parent link on its own account's subject, it is FORBIDDEN and nothing is queued", async () => {
    const account = 'nats-subtask-tenant';
    const reply = ErrorBody.parse(
      await request(
        submission(),
        { [TASK_PARENT_HEADER]: JSON.stringify(parentLink()) },
        accountSubmitSubject(account),
      ),
    );
    expect(reply.code).toBe('FORBIDDEN');
    expect(await storedCount(account)).toBe(0);
  });

  it('when the parent link is not a TaskParent, the submission is INVALID_REQUEST and nothing is queued', async () => {
    const account = 'nats-subtask-bad-link';
    const reply = ErrorBody.parse(
      await request(submission(), {
        'x-account-id': account,
        [TASK_PARENT_HEADER]: JSON.stringify({ ...parentLink(), depth: 0 }),
      }),
    );
    expect(reply).toMatchObject({ code: 'INVALID_REQUEST' });
    expect(reply.message).toContain(TASK_PARENT_HEADER);
    expect(await storedCount(account)).toBe(0);
  });
});

describe('a NATS submission whose reply subject is not an inbox', () => {
  it('is neither run nor answered: the reply subject (here a KV key of another account) gets nothing', async () => {
    const victim = '$KV.mesh_agents.acct.globex.victim';
    const heard: string[] = [];
    const spy = client.subscribe(victim, { callback: (_error, msg) => void heard.push(msg.string()) });
    const before = await storedCount('acme');
    const headers = natsHeaders();
    headers.set('authorization', `Bearer ${ACME_KEY}`);
    client.publish(accountSubmitSubject('acme'), JSON.stringify(submission()), { reply: victim, headers });

    await waitFor(() => gw.logs.some((line) => line.includes('its reply subject is not an inbox')), {
      description: 'the gateway to set the submission aside',
    });
    // A request after it on the same connection is answered; the one before was not run.
    SubmitTaskReply.parse(
      await request(submission(), { authorization: `Bearer ${ACME_KEY}` }, accountSubmitSubject('acme')),
    );
    await client.flush();
    expect(heard).toEqual([]);
    expect(await storedCount('acme')).toBe(before + 1);
    spy.unsubscribe();
  });
});
