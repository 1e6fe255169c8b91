/**
 * Limits on tasks running at once, on a real gateway and NATS: refused with 429 RATE_LIMITED before
 * anything is written, and a slot freed however the task ends (done, error or cancelled event, or only a
 * final status or no status record at all).
 */
import { ErrorBody, Streams, Subjects, TaskStatus, taskKey, taskReceivedSubject } from '@agentmesh/protocol';
import { openMeshBuckets, TaskEventWriter, TaskStatusStore } from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';

const KEYS = {
  events: 'events-key-0a1b2c3d4e5f60718293',
  teamA: 'team-a-key-1b2c3d4e5f6071829304',
  teamB: 'team-b-key-2c3d4e5f607182930415',
  status: 'status-key-3d4e5f60718293041526',
  repeat: 'repeat-key-4e5f6071829304152637',
  ingress: 'ingress-key-5f607182930415263748',
} as const;

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let tasksKv: Awaited<ReturnType<typeof openMeshBuckets>>['tasks'];

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    API_KEYS: [
      `${KEYS.events}=events`,
      `${KEYS.teamA}=team`,
      `${KEYS.teamB}=team`,
      `${KEYS.status}=status`,
      `${KEYS.repeat}=repeat`,
      `${KEYS.ingress}=ingress`,
    ].join(','),
    MAX_RUNNING_TASKS_PER_API_KEY: '2',
    MAX_RUNNING_TASKS_PER_ACCOUNT: '3',
    RUNNING_TASKS_RECHECK_MS: '200',
  });
  await putSharedAgents(nats.url, 'qcc_agent');
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  tasksKv = (await openMeshBuckets(js)).tasks;
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const submission = {
  workflow_id: 'qcc_agent',
  user_id: 'u-1',
  messages: [{ role: 'user', content: 'hello' }],
};

async function submit(key: string, body: object = submission) {
  return call(gw.url, 'POST', '/v1/tasks', { body, headers: bearer(key) });
}

async function accepted(key: string): Promise<string> {
  const res = await submit(key);
  expect(res.status).toBe(202);
  return res.body.trace_id as string;
}

async function storedTasks(account: string): Promise<number> {
  const subject = taskReceivedSubject(account);
  const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

const running = (account: string): number | undefined => gw.gateway.runningTasks?.runningFor(account);

async function writer(accountId: string, traceId: string): Promise<TaskEventWriter> {
  return TaskEventWriter.open(js, jsm, { accountId, traceId, attempt: 1 });
}

describe('tasks running at once', () => {
  it('when an API key has as many tasks running as allowed, the next gets 429 RATE_LIMITED with Retry-After and nothing reaches the bus; a done event frees a slot', async () => {
    const first = await accepted(KEYS.events);
    await accepted(KEYS.events);

    const refused = await submit(KEYS.events);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(ErrorBody.parse(refused.body)).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'api_key', limit_running: 2, retry_after_seconds: 5 },
    });
    expect(await storedTasks('events')).toBe(2);

    const events = await writer('events', first);
    await events.emit('message_chunk', { delta: 'Byte' });
    await events.emit('done', {
      message: 'ByteDance',
      steps: 1,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      duration_ms: 5,
    });
    await expect.poll(() => running('events'), { timeout: 10_000 }).toBe(1);
    await accepted(KEYS.events);
    expect(await storedTasks('events')).toBe(3);
  });

  it('two keys of one account share the account limit, and an error event (a cancelled task) frees a slot', async () => {
    const cancelled = await accepted(KEYS.teamA);
    await accepted(KEYS.teamA);
    await accepted(KEYS.teamB);

    const refused = await submit(KEYS.teamB);
    expect(refused.status).toBe(429);
    expect(ErrorBody.parse(refused.body)).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'account', limit_running: 3, retry_after_seconds: 5 },
    });
    expect(await storedTasks('team')).toBe(3);

    const events = await writer('team', cancelled);
    await events.emit('error', { code: 'CANCELLED', message: 'cancelled by the caller', retryable: false });
    await expect.poll(() => running('team'), { timeout: 10_000 }).toBe(2);
    await accepted(KEYS.teamB);
  });

  it('a task that ends with no terminal event seen (only a final status, or no status record left) frees its slot', async () => {
    const errored = await accepted(KEYS.status);
    const vanished = await accepted(KEYS.status);
    expect((await submit(KEYS.status)).status).toBe(429);

    const statuses = new TaskStatusStore(tasksKv);
    await statuses.update('status', errored, (current) =>
      current
        ? {
            ...current,
            status: TaskStatus.ERROR,
            updated_at: new Date().toISOString(),
            error: { code: 'INVALID_REQUEST', message: 'never assembled' },
          }
        : undefined,
    );
    await expect.poll(() => running('status'), { timeout: 5_000 }).toBe(1);

    await tasksKv.purge(taskKey('status', vanished));
    await expect.poll(() => running('status'), { timeout: 5_000 }).toBe(0);
    await accepted(KEYS.status);
  });

  it('a repeated or refused submission holds no slot: only the task it published counts', async () => {
    const body = { ...submission, idempotency_key: 'once-only-1' };
    const first = await submit(KEYS.repeat, body);
    const again = await submit(KEYS.repeat, body);
    expect(first.status).toBe(202);
    expect(again.status).toBe(202);
    expect(again.body.trace_id).toBe(first.body.trace_id);
    const reused = await submit(KEYS.repeat, { ...body, messages: [{ role: 'user', content: 'other' }] });
    expect(reused.status).toBe(422);
    expect(running('repeat')).toBe(1);
    await accepted(KEYS.repeat);
    expect(running('repeat')).toBe(2);
  });

  it('the NATS ingress answers the same refusal, with the wait in the body', async () => {
    await accepted(KEYS.ingress);
    await accepted(KEYS.ingress);
    const headers = natsHeaders();
    headers.set('authorization', `Bearer ${KEYS.ingress}`);
    const reply = await client.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(submission), {
      timeout: 5_000,
      headers,
    });
    expect(ErrorBody.parse(reply.json())).toMatchObject({
      code: 'RATE_LIMITED',
      detail: { scope: 'api_key', limit_running: 2, retry_after_seconds: 5 },
    });
    expect(await storedTasks('ingress')).toBe(2);
  });
});
