// A redelivered task resumes from its own event log: an attempt that died left events behind (written here
// as that attempt would have), and the next delivery goes on from them on a real NATS server.
import {
  AccountUsageStore,
  ensureMeshStreams,
  followTaskEvents,
  openMeshBuckets,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  cancelSubject,
  Consumers,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  utcDay,
  type AssembledTask,
  type EventData,
  type EventType,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';
import { ensureExecutorConsumer } from './task-consumer.js';
import { subtaskTraceId } from './tools/sub-agent/index.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-77aa01';
const SEARCH_KEY = 'canary-search-key-77bb02';
const ACK_WAIT_MS = 1_500;
const vaultKeys = generateVaultKeyPair('exec-resume-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let model: ScriptedModel;
let api: RecordingApi;
const instances: { stop(): Promise<void> }[] = [];

const userText = (request: { body: unknown }): string =>
  String(
    (request.body as ChatCompletionRequest['body']).messages.find((m) => m.role === 'user')?.content ?? '',
  );

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    // Searches once, then answers; a resumed task that already searched gets the answer at once.
    respond: (request) =>
      request.body.messages.some((m) => m.role === 'tool')
        ? { content: `answer to ${userText(request)}`, chunkSize: 5 }
        : { toolCalls: [{ id: 'call_new', name: 'search', arguments: { q: userText(request) } }] },
  });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: (request) => ({ body: { hits: [request.query['q']] } }) },
    ],
  });
  await ensureMeshStreams(jsm);
  await ensureExecutorConsumer(jsm, { maxDeliver: 1, ackWaitMs: ACK_WAIT_MS, maxAckPending: 1000 });
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

async function startInstance(maxDeliver = 3, ackWaitMs = ACK_WAIT_MS): Promise<void> {
  instances.push(
    await startInProcessExecutor({
      natsUrl: nats.url,
      vaultKeys,
      env: {
        ACK_WAIT_MS: String(ackWaitMs),
        ACK_PROGRESS_MS: '300',
        PULL_EXPIRES_MS: '1000',
        MAX_DELIVER: String(maxDeliver),
      },
    }),
  );
}

function newTask(user: string, accountId = ACCOUNT): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY, [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: [searchTool(api.url)],
  });
}

/** Plays the first attempt: takes the task, writes `events` as it would have, and dies unacknowledged. */
async function firstAttemptDies(
  task: AssembledTask,
  events: Array<{ [T in EventType]: [T, EventData<T>] }[EventType]>,
  /** The attempt number its events carry (a replicated consumer can hand a count out twice). */
  writtenAs = 1,
): Promise<void> {
  await js.publish(taskAssembledSubject(task.task_meta.account_id), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
  const nc = await connect({ servers: nats.url });
  const msg = await jetstream(nc)
    .consumers.get(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name)
    .then((consumer) => consumer.next({ expires: 5_000 }));
  expect(msg?.info.deliveryCount).toBe(1);
  const writer = TaskEventWriter.first(js, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    attempt: writtenAs,
  });
  for (const [type, data] of events) await writer.emit(type, data as never);
  await nc.close();
}

async function eventsOf(task: AssembledTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  const signal = AbortSignal.timeout(20_000);
  for await (const event of followTaskEvents(js, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    signal,
  }))
    events.push(event);
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

const searchesFor = (q: string) => api.requests.filter((request) => request.query['q'] === q);
const modelRequestsFor = (user: string) => model.requests.filter((request) => userText(request) === user);

describe('resuming a redelivered task from its event log', () => {
  it('a call whose tool_result was written is not run again; attempt_started says what stands, and the task ends done', async () => {
    const user = 'resume after the result';
    const task = newTask(user);
    await firstAttemptDies(task, [
      ['message_chunk', { delta: 'Searching.' }],
      ['tool_start', { call_id: 'call_1', tool: 'search', arguments: { q: user } }],
      [
        'tool_result',
        { call_id: 'call_1', tool: 'search', ok: true, result: { hits: [user] }, duration_ms: 4 },
      ],
      ['message_chunk', { delta: 'The answ' }],
    ]);
    await startInstance();
    const events = await eventsOf(task);

    expect(searchesFor(user)).toEqual([]);
    expect(events[4]).toMatchObject({
      seq: 5,
      attempt: 2,
      type: 'attempt_started',
      data: { drop_text_after_seq: 3, resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
    });
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      attempt: 2,
      data: { message: `answer to ${user}`, steps: 2 },
    });
    // The model was asked once, with the turn and the result the first attempt stored.
    const asked = modelRequestsFor(user);
    expect(asked).toHaveLength(1);
    expect((asked[0]!.body as ChatCompletionRequest['body']).messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: 'Searching.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'search', arguments: JSON.stringify({ q: user }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: JSON.stringify({ hits: [user] }) },
    ]);
    // What a client keeps (text up to drop_text_after_seq, then the new attempt's) is the final answer.
    const kept = events.filter(
      (event) => event.type === 'message_chunk' && (event.attempt === 2 || event.seq <= 3),
    );
    const lastTurnText = kept
      .filter((event) => event.seq > 5)
      .map((event) => (event.type === 'message_chunk' ? event.data.delta : ''))
      .join('');
    expect(lastTurnText).toBe(`answer to ${user}`);
  });

  it("a resumed task's step_finished and done count the earlier attempt's model calls too", async () => {
    const user = 'resume and count the tokens';
    const task = newTask(user);
    const earlier = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };
    await firstAttemptDies(task, [
      ['message_chunk', { delta: 'Searching.' }],
      ['step_finished', { step: 1, usage: earlier, total_usage: earlier }],
      ['tool_start', { call_id: 'call_1', tool: 'search', arguments: { q: user } }],
      [
        'tool_result',
        { call_id: 'call_1', tool: 'search', ok: true, result: { hits: [user] }, duration_ms: 4 },
      ],
    ]);
    await startInstance();
    const events = await eventsOf(task);

    expect(modelRequestsFor(user)).toHaveLength(1);
    const steps = events.flatMap((event) => (event.type === 'step_finished' ? [event] : []));
    expect(steps.map((event) => [event.attempt, event.data.step])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    const own = steps[1]!.data.usage;
    const total = {
      prompt_tokens: 100 + own.prompt_tokens,
      completion_tokens: 20 + own.completion_tokens,
      total_tokens: 120 + own.total_tokens,
    };
    expect(steps[1]!.data.total_usage).toEqual(total);
    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 2, data: { steps: 2, usage: total } });
  });

  it('a call with a tool_start and no result runs once more with the same call_id and idempotency key', async () => {
    const user = 'resume a started call';
    const task = newTask(user);
    await firstAttemptDies(task, [
      ['tool_start', { call_id: 'call_1', tool: 'search', arguments: { q: user } }],
    ]);
    await startInstance();
    const events = await eventsOf(task);

    expect(searchesFor(user).map((request) => request.headers['idempotency-key'])).toEqual([
      `${task.task_meta.trace_id}:call_1`,
    ]);
    expect(events.slice(1).map((event) => [event.type, event.attempt])).toEqual([
      ['attempt_started', 2],
      ['tool_start', 2],
      ['tool_result', 2],
      ...events.slice(4, -2).map(() => ['message_chunk', 2]),
      ['step_finished', 2],
      ['done', 2],
    ]);
    expect(events[1]!.data).toMatchObject({
      rerun_call_ids: ['call_1'],
      resumed_steps: 1,
      resumed_tool_results: 0,
    });
    expect(events[2]!.data).toMatchObject({ call_id: 'call_1' });
    expect(modelRequestsFor(user)).toHaveLength(1);
  });

  it('a delivery that died before writing any event does not count toward MAX_DELIVER', async () => {
    const user = 'died before any work';
    const task = newTask(user);
    await firstAttemptDies(task, []);
    await startInstance(1);
    const events = await eventsOf(task);

    expect(events.some((event) => event.type === 'attempt_started')).toBe(false);
    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 2 });
  });

  it('a task whose attempts that did work reach MAX_DELIVER ends with MAX_DELIVER_EXCEEDED without running', async () => {
    const user = 'worked and died';
    const task = newTask(user);
    await firstAttemptDies(task, [['message_chunk', { delta: 'Hm' }]]);
    await startInstance(1);
    const events = await eventsOf(task);

    expect(events.slice(1)).toEqual([
      expect.objectContaining({
        type: 'error',
        attempt: 2,
        data: expect.objectContaining({ code: 'MAX_DELIVER_EXCEEDED' }),
      }),
    ]);
    expect(modelRequestsFor(user)).toHaveLength(0);
  });

  it("a task that runs out of attempts adds its earlier attempts' model calls to its account's day", async () => {
    // An account of its own: the other tests' tasks add to theirs.
    const SPENDER = 'spender';
    const task = newTask('spent and died', SPENDER);
    const used = { prompt_tokens: 300, completion_tokens: 33, total_tokens: 333 };
    await firstAttemptDies(task, [
      ['message_chunk', { delta: 'Hm' }],
      ['step_finished', { step: 1, usage: used, total_usage: used }],
    ]);
    await startInstance(1);
    const events = await eventsOf(task);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'MAX_DELIVER_EXCEEDED' } });

    const { accountUsage } = await openMeshBuckets(js, { only: ['accountUsage'] });
    const store = new AccountUsageStore(accountUsage);
    // Added by the attempt once its terminal event was stored.
    const usage = await waitFor(
      async () => {
        const today = await store.get(SPENDER, utcDay(new Date()));
        return today.tasks > 0 ? today : undefined;
      },
      { timeoutMs: 10_000, description: "the task's usage added" },
    );
    expect(usage).toMatchObject({ total_tokens: 333, tasks: 1 });
  });

  it('a first delivery (count 1) of a task whose events an earlier holder wrote is handed straight back and resumes as attempt 2, not left for ack_wait', async () => {
    const user = 'delivered as the first again';
    const task = newTask(user);
    // The events of an attempt 1 the server no longer counts: the task's next delivery says 1 again.
    const writer = TaskEventWriter.first(js, {
      accountId: ACCOUNT,
      traceId: task.task_meta.trace_id,
      attempt: 1,
    });
    await writer.emit('tool_start', { call_id: 'call_1', tool: 'search', arguments: { q: user } });
    await writer.emit('tool_result', {
      call_id: 'call_1',
      tool: 'search',
      ok: true,
      result: { hits: [user] },
      duration_ms: 3,
    });
    await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
      msgID: `${task.task_meta.trace_id}:assembled`,
    });
    // An ack_wait far beyond how long eventsOf follows: only a hand-back brings delivery 2 in time.
    await startInstance(3, 120_000);
    const events = await eventsOf(task);

    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 2, data: { message: `answer to ${user}` } });
    expect(events.find((event) => event.type === 'attempt_started')).toMatchObject({
      attempt: 2,
      data: { resumed_tool_results: 1, rerun_call_ids: [] },
    });
    expect(searchesFor(user)).toEqual([]);
  });

  it('a delivery whose count the log already used (events of attempt 3 before delivery 2) runs as attempt 4, so clients can tell the attempts apart', async () => {
    const user = 'a count handed out twice';
    const task = newTask(user);
    await firstAttemptDies(
      task,
      [
        ['tool_start', { call_id: 'call_1', tool: 'search', arguments: { q: user } }],
        [
          'tool_result',
          { call_id: 'call_1', tool: 'search', ok: true, result: { hits: [user] }, duration_ms: 2 },
        ],
        ['message_chunk', { delta: 'The ans' }],
      ],
      3,
    );
    await startInstance();
    const events = await eventsOf(task);

    expect(events.slice(3).map((event) => [event.type, event.attempt])).toEqual([
      ['attempt_started', 4],
      ...events.slice(4, -2).map(() => ['message_chunk', 4]),
      ['step_finished', 4],
      ['done', 4],
    ]);
    expect(searchesFor(user)).toEqual([]);
  });

  it('a task cancelled while no attempt ran it ends CANCELLED on its redelivery, and the sub-task an earlier attempt started is cancelled with it', async () => {
    const user = 'cancelled while it waited for its sub-task';
    const task = newTask(user);
    const traceId = task.task_meta.trace_id;
    const subId = subtaskTraceId(traceId, 'call_sub');
    const statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
    const now = new Date().toISOString();
    const record = { account_id: ACCOUNT, attempt: 1, submitted_at: now, updated_at: now } as const;
    await statuses.create({
      ...record,
      trace_id: subId,
      workflow_id: 'researcher',
      status: 'running',
      parent_trace_id: traceId,
    });
    await firstAttemptDies(task, [
      ['tool_start', { call_id: 'call_sub', tool: 'agent_researcher', arguments: { input: 'dig' } }],
      [
        'subtask_started',
        { call_id: 'call_sub', tool: 'agent_researcher', subtask_trace_id: subId, workflow_id: 'researcher' },
      ],
    ]);
    await statuses.create({
      ...record,
      trace_id: traceId,
      workflow_id: task.task_meta.workflow_id,
      status: 'running',
      cancel_requested_at: now,
    });
    const broadcast = client.subscribe(cancelSubject(ACCOUNT, subId), { max: 1, timeout: 10_000 });
    const heard = (async () => {
      for await (const msg of broadcast) return msg.json<{ trace_id: string }>();
      return undefined;
    })();
    await client.flush();

    await startInstance();
    const events = await eventsOf(task);

    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(modelRequestsFor(user)).toEqual([]);
    // The sub-task is cancelled once the parent's end is stored (its terminal event, then its status).
    expect(await heard).toMatchObject({ trace_id: subId });
    expect((await statuses.get(ACCOUNT, subId))?.cancel_requested_at).toBeDefined();
  });
});
