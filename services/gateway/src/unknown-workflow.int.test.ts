/**
 * A task naming no agent is refused at submit, on every door, before anything is stored: 404 NOT_FOUND
 * over HTTP, the same error body over NATS (account subjects, the trusted subject, sub-tasks), with no
 * status record, no idempotency claim and no message on the task stream left behind. An agent of the
 * account or of the shared catalogue is found; another account's is not. Pre-assembled payloads carry
 * their own agent and are not looked up.
 */
import { AgentStore, accountScope, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  accountSubmitSubject,
  ErrorBody,
  newTraceId,
  Streams,
  Subjects,
  SubmitTaskReply,
  TASK_PARENT_HEADER,
  taskReceivedSubject,
} from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  putSharedAgents,
  seedFixture,
  startTestGateway,
  type TestGateway,
} from './__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-unknown-wf-0123456789ab';
const OTHER_KEY = 'other-key-unknown-wf-0123456789a';

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
let idempotency: KV;
let agents: AgentStore;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: `${ACME_KEY}=acme,${OTHER_KEY}=other`,
    TRUST_ACCOUNT_HEADERS: 'true',
  });
  await putSharedAgents(nats.url, 'shared_agent');
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  const buckets = await openMeshBuckets(jetstream(client), { only: ['tasks', 'idempotency', 'agents'] });
  statuses = new TaskStatusStore(buckets.tasks);
  idempotency = buckets.idempotency;
  agents = new AgentStore(buckets.agents);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const task = (workflowId: string, extra: Record<string, unknown> = {}) => ({
  workflow_id: workflowId,
  user_id: 'u-1',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

async function storedTasks(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

async function idempotencyKeys(): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await idempotency.keys()) keys.push(key);
  return keys;
}

async function natsRequest(subject: string, body: unknown, headerValues: Record<string, string> = {}) {
  const headers = natsHeaders();
  for (const [name, value] of Object.entries(headerValues)) headers.set(name, value);
  const reply = await client.request(subject, JSON.stringify(body), { timeout: 5_000, headers });
  return reply.json<unknown>();
}

describe('a task naming no agent', () => {
  it.each(['/v1/tasks', '/v1/run_workflow'])(
    'over HTTP %s is 404 NOT_FOUND naming the workflow, and leaves no status, no idempotency claim and no queued task',
    async (path) => {
      const traceId = newTraceId();
      const keysBefore = await idempotencyKeys();

      const response = await call(gw.url, 'POST', path, {
        headers: bearer(ACME_KEY),
        body: task('no_such_agent', { trace_id: traceId, idempotency_key: `idem-${traceId}` }),
      });

      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        code: 'NOT_FOUND',
        message: expect.stringContaining('"no_such_agent"'),
        detail: { workflow_id: 'no_such_agent', account_id: 'acme' },
      });
      expect(await statuses.get('acme', traceId)).toBeUndefined();
      expect(await idempotencyKeys()).toEqual(keysBefore);
      expect(await storedTasks('acme')).toBe(0);
    },
  );

  it.each([
    [
      'mesh.gateway.submit (trusted, naming the account)',
      Subjects.GATEWAY_SUBMIT,
      { 'x-account-id': 'nats-acct' },
    ],
    ["mesh.gateway.submit.<account> (the account's own subject)", accountSubmitSubject('nats-acct'), {}],
    [
      'mesh.gateway.submit with a sub-task parent link (an executor calling an agent tool)',
      Subjects.GATEWAY_SUBMIT,
      {
        'x-account-id': 'nats-acct',
        [TASK_PARENT_HEADER]: JSON.stringify({
          trace_id: newTraceId(),
          call_id: 'call_1_0',
          root_trace_id: newTraceId(),
          depth: 1,
        }),
      },
    ],
  ])('over NATS on %s the reply is NOT_FOUND and nothing is queued', async (_door, subject, headers) => {
    const traceId = newTraceId();

    const reply = ErrorBody.parse(
      await natsRequest(subject, task('no_such_agent', { trace_id: traceId }), headers),
    );

    expect(reply).toMatchObject({ code: 'NOT_FOUND', detail: { workflow_id: 'no_such_agent' } });
    expect(await statuses.get('nats-acct', traceId)).toBeUndefined();
    expect(await storedTasks('nats-acct')).toBe(0);
  });

  it("another account's agent is not found; the account's own and the shared catalogue's are queued", async () => {
    await agents.put(accountScope('other'), {
      workflow_id: 'others_agent',
      model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
    });

    const foreign = await call(gw.url, 'POST', '/v1/tasks', {
      headers: bearer(ACME_KEY),
      body: task('others_agent'),
    });
    const own = await call(gw.url, 'POST', '/v1/tasks', {
      headers: bearer(OTHER_KEY),
      body: task('others_agent'),
    });
    const shared = await call(gw.url, 'POST', '/v1/tasks', {
      headers: bearer(ACME_KEY),
      body: task('shared_agent'),
    });

    expect(foreign.status).toBe(404);
    expect(own.status).toBe(202);
    expect(shared.status).toBe(202);
    expect(await storedTasks('other')).toBe(1);
  });

  it('once the agent is stored, the same request (same idempotency key) is accepted: the refusal held nothing', async () => {
    const body = task('late_agent', { idempotency_key: 'late-agent-key' });
    const refused = await call(gw.url, 'POST', '/v1/tasks', { headers: bearer(ACME_KEY), body });
    expect(refused.status).toBe(404);

    await agents.put(accountScope('acme'), {
      workflow_id: 'late_agent',
      model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
    });
    const accepted = await call(gw.url, 'POST', '/v1/tasks', { headers: bearer(ACME_KEY), body });

    expect(accepted.status).toBe(202);
    const reply = SubmitTaskReply.parse(accepted.body);
    expect(await statuses.get('acme', reply.trace_id)).toMatchObject({
      workflow_id: 'late_agent',
      status: 'queued',
    });
  });

  it('a seed-001 pre-assembled payload names no registered agent and is still queued', async () => {
    const seed = seedFixture('001-s2-payload.json');
    expect(seed.task_meta.workflow_id).toBeDefined();
    expect(await agents.resolve(accountScope('pre-acct'), seed.task_meta.workflow_id)).toBeUndefined();

    const response = await call(gw.url, 'POST', '/v1/tasks', {
      headers: { 'x-account-id': 'pre-acct' },
      body: seed,
    });

    expect(response.status).toBe(202);
    expect(await storedTasks('pre-acct')).toBe(1);
  });
});
