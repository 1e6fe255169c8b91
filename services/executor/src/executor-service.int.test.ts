import { ensureMeshStreams, followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  cancelSubject,
  Consumers,
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  Streams,
  taskAssembledSubject,
  type AssembledTask,
  type CancelSignal,
  type HttpTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type ModelStep,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { recordWire, startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';
import { ensureExecutorConsumer } from './task-consumer.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-5e0b91';
const SEARCH_KEY = 'canary-search-key-d27f44';
const CANARIES = [MODEL_KEY, SEARCH_KEY];
const ACK_WAIT_MS = 2_000;
const vaultKeys = generateVaultKeyPair('exec-test-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let model: ScriptedModel;
let api: RecordingApi;
/** Every message on every subject for the whole file: `>`. */
let wire: { subject: string; text: string }[] = [];
const logLines: string[] = [];
/** Per user message: how the model answers that task (default: search once if tools are offered, then answer). */
const behaviours = new Map<string, (request: ChatCompletionRequest) => ModelStep>();
const instances: { stop(): Promise<void> }[] = [];

function defaultAnswer(request: ChatCompletionRequest): ModelStep {
  const user = userText(request);
  const searched = request.body.messages.some((m) => m.role === 'tool');
  if ((request.body.tools?.length ?? 0) > 0 && !searched) {
    return { toolCalls: [{ name: 'search', arguments: { q: user } }] };
  }
  return { content: `answer to ${user}`, chunkSize: 6 };
}

function userText(request: { body: unknown }): string {
  const messages = (request.body as ChatCompletionRequest['body']).messages;
  return String(messages.find((m) => m.role === 'user')?.content ?? '');
}

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  wire = recordWire(client);
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    respond: (request) => (behaviours.get(userText(request)) ?? defaultAnswer)(request),
  });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: (request) => ({ body: { hits: [`${request.query['q']}`] } }) },
    ],
  });
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

async function startInstance(env: Record<string, string> = {}): Promise<RunningService> {
  const instance = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    logLines,
    env: {
      ACK_WAIT_MS: String(ACK_WAIT_MS),
      ACK_PROGRESS_MS: '400',
      LLM_MAX_RETRIES: '1',
      ...env,
    },
  });
  instances.push(instance);
  return instance;
}

async function stopInstance(instance: RunningService): Promise<void> {
  const index = instances.indexOf(instance);
  if (index >= 0) instances.splice(index, 1);
  await instance.stop();
}

function newTask(options: { user: string; tools?: HttpTool[]; maxSteps?: number }): AssembledTask {
  const traceId = newTraceId();
  return assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY, [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: options.user,
    ...(options.tools ? { tools: options.tools } : {}),
    ...(options.maxSteps ? { maxSteps: options.maxSteps } : {}),
  });
}

async function publishTask(task: AssembledTask): Promise<void> {
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
}

async function eventsOf(task: AssembledTask, timeoutMs = 20_000): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  const signal = AbortSignal.timeout(timeoutMs);
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal,
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) {
    throw new Error(
      `no terminal event for ${task.task_meta.trace_id} within ${timeoutMs} ms: ${JSON.stringify(events)}`,
    );
  }
  return events;
}

function modelRequestsFor(task: AssembledTask) {
  const user = task.input.messages.find((m) => m.role === 'user')?.content;
  return model.requests.filter((request) => request.outcome !== 'models' && userText(request) === user);
}

/** Waits until the executor consumer has nothing pending or unacknowledged, so nothing can be redelivered. */
async function consumerSettled(): Promise<void> {
  await waitFor(
    async () => {
      const info = await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    },
    { timeoutMs: 10_000, description: 'the executor consumer to have nothing pending' },
  );
}

/** Every event stored in MESH_EVENTS, by trace id (not only up to the first terminal one). */
async function storedEvents(): Promise<Map<string, TaskEvent[]>> {
  const byTrace = new Map<string, TaskEvent[]>();
  const info = await jsm.streams.info(Streams.EVENTS.name);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const msg = await jsm.streams.getMessage(Streams.EVENTS.name, { seq });
    if (!msg) continue;
    const event = msg.json<TaskEvent>();
    byTrace.set(event.trace_id, [...(byTrace.get(event.trace_id) ?? []), event]);
  }
  return byTrace;
}

const statusStore = async () => new TaskStatusStore((await openMeshBuckets(js)).tasks);

/** The task's status once it is final (it is written just after the terminal event). */
async function finalStatusOf(task: AssembledTask) {
  const statuses = await statusStore();
  return waitFor(
    async () => {
      const status = await statuses.get(task.task_meta.account_id, task.task_meta.trace_id);
      return status && ['done', 'error', 'cancelled'].includes(status.status) ? status : undefined;
    },
    { description: `the final status of ${task.task_meta.trace_id}` },
  );
}

/** Plays an executor that takes the task and dies before acknowledging it. */
async function takeAndCrash(): Promise<void> {
  const nc = await connect({ servers: nats.url });
  const consumer = await jetstream(nc).consumers.get(
    Consumers.EXECUTOR.stream,
    Consumers.EXECUTOR.durable_name,
  );
  const msg = await consumer.next({ expires: 5_000 });
  expect(msg?.info.deliveryCount).toBe(1);
  await nc.close();
}

describe('the executor service on NATS', () => {
  it('runs an assembled task with an HTTP tool and streams step_finished, tool_start, tool_result, message_chunks, step_finished and done in seq order', async () => {
    await startInstance();
    const task = newTask({ user: 'who makes agentmesh?', tools: [searchTool(api.url)] });
    await publishTask(task);
    const events = await eventsOf(task);

    // The call's short arguments come whole in its tool_start: no tool_call_delta (TOOL_ARGS_STREAM_MIN_CHARS).
    expect(events.some((e) => e.type === 'tool_call_delta')).toBe(false);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 3)).toEqual(['step_finished', 'tool_start', 'tool_result']);
    expect(types.slice(3, -2).every((type) => type === 'message_chunk')).toBe(true);
    expect(types.length).toBeGreaterThan(5);
    expect(types.slice(-2)).toEqual(['step_finished', 'done']);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.every((e) => e.attempt === 1 && e.trace_id === task.task_meta.trace_id)).toBe(true);
    expect(events[2]!.data).toMatchObject({
      ok: true,
      result: { hits: ['who makes agentmesh?'] },
    });
    expect(events.at(-1)!.data).toMatchObject({ message: 'answer to who makes agentmesh?', steps: 2 });

    // The vault was opened in memory: the model got its key, the API its credential.
    const apiCall = api.requests.find((r) => r.query['q'] === 'who makes agentmesh?');
    expect(apiCall?.headers['x-api-key']).toBe(SEARCH_KEY);
    expect(modelRequestsFor(task)[0]?.headers['authorization']).toBe(`Bearer ${MODEL_KEY}`);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'done', attempt: 1, last_seq: events.length });
    await consumerSettled();
  });

  it('two executor instances share 20 tasks: each task runs exactly once and has exactly one terminal event', async () => {
    await Promise.all([
      startInstance({ EXECUTOR_ID: 'exec-a', MAX_CONCURRENT_TASKS: '4' }),
      startInstance({ EXECUTOR_ID: 'exec-b', MAX_CONCURRENT_TASKS: '4' }),
    ]);
    const tasks = Array.from({ length: 20 }, (_, i) => newTask({ user: `shared task ${i}` }));
    await Promise.all(tasks.map(publishTask));
    const streams = await Promise.all(tasks.map((task) => eventsOf(task)));
    await consumerSettled();
    const stored = await storedEvents();

    for (const [i, task] of tasks.entries()) {
      expect(streams[i]!.at(-1)).toMatchObject({
        type: 'done',
        attempt: 1,
        data: { message: `answer to shared task ${i}` },
      });
      expect(modelRequestsFor(task)).toHaveLength(1);
      const terminals = (stored.get(task.task_meta.trace_id) ?? []).filter(isTerminalEvent);
      expect(terminals).toHaveLength(1);
    }
  });

  it('a task running longer than three ack_waits is kept by in-progress acks: it is never redelivered while its executor lives, and the consumer carries the configured ack_wait', async () => {
    // A consumer left by an older deployment with a long ack_wait is brought to the configured one.
    await ensureMeshStreams(jsm);
    await ensureExecutorConsumer(jsm, { maxDeliver: 3, ackWaitMs: 30_000, maxAckPending: 1000 });
    const task = newTask({ user: 'take your time' });
    behaviours.set('take your time', () => ({ content: 'slow but sure', latencyMs: ACK_WAIT_MS * 3.5 }));
    await Promise.all([startInstance({ EXECUTOR_ID: 'exec-a' }), startInstance({ EXECUTOR_ID: 'exec-b' })]);
    const consumer = await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
    expect(consumer.config.ack_wait).toBe(ACK_WAIT_MS * 1_000_000);
    await publishTask(task);
    const events = await eventsOf(task);
    await consumerSettled();

    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 1, data: { message: 'slow but sure' } });
    expect(events.every((event) => event.attempt === 1)).toBe(true);
    expect(modelRequestsFor(task)).toHaveLength(1);
    // One delivery in all: a redelivery would count another.
    const after = await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
    expect(after.delivered.consumer_seq - consumer.delivered.consumer_seq).toBe(1);
  });

  it('a task whose first executor died before acknowledging it is redelivered after ack_wait and finishes on the next attempt', async () => {
    await ensureExecutorConsumer(jsm, { maxDeliver: 3, ackWaitMs: ACK_WAIT_MS, maxAckPending: 1000 });
    const task = newTask({ user: 'survive a crash' });
    await publishTask(task);
    await takeAndCrash();
    await startInstance();
    const events = await eventsOf(task);

    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 2 });
    expect(modelRequestsFor(task)).toHaveLength(1);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'done', attempt: 2 });
  });

  it("a task on the consumer's last delivery (MAX_DELIVERIES) ends with MAX_DELIVER_EXCEEDED without running", async () => {
    await ensureExecutorConsumer(jsm, {
      maxDeliver: 1,
      maxDeliveries: 2,
      ackWaitMs: ACK_WAIT_MS,
      maxAckPending: 1000,
    });
    const task = newTask({ user: 'delivered too often' });
    await publishTask(task);
    await takeAndCrash();
    await startInstance({ MAX_DELIVER: '1', MAX_DELIVERIES: '2' });
    const events = await eventsOf(task);

    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'error',
      attempt: 2,
      data: { code: 'MAX_DELIVER_EXCEEDED', retryable: false },
    });
    expect(modelRequestsFor(task)).toHaveLength(0);
    expect(await finalStatusOf(task)).toMatchObject({
      status: 'error',
      error: { code: 'MAX_DELIVER_EXCEEDED' },
    });
    await consumerSettled();
  });

  it('a cancel requested before the task starts prevents the run: CANCELLED, and the model gets no request', async () => {
    const task = newTask({ user: 'cancelled early', tools: [searchTool(api.url)] });
    const statuses = await statusStore();
    const now = new Date().toISOString();
    await statuses.create({
      trace_id: task.task_meta.trace_id,
      account_id: ACCOUNT,
      workflow_id: task.task_meta.workflow_id,
      status: 'queued',
      attempt: 0,
      updated_at: now,
      cancel_requested_at: now,
    });
    await publishTask(task);
    await startInstance();
    const events = await eventsOf(task);

    expect(events).toEqual([
      expect.objectContaining({ type: 'error', data: expect.objectContaining({ code: 'CANCELLED' }) }),
    ]);
    expect(modelRequestsFor(task)).toHaveLength(0);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'cancelled', error: { code: 'CANCELLED' } });
  });

  it('a task whose model base_url is loopback while MODEL_ALLOW_HOSTS does not list it ends FORBIDDEN, and the model key is never sent', async () => {
    // Tools may reach 127.0.0.1 here; the model endpoint has its own allow-list, empty for this instance.
    await startInstance({ MODEL_ALLOW_HOSTS: '' });
    const task = newTask({ user: 'talk to a model on loopback', tools: [searchTool(api.url)] });
    await publishTask(task);
    const events = await eventsOf(task);

    expect(events).toEqual([
      expect.objectContaining({
        type: 'error',
        data: expect.objectContaining({ code: 'FORBIDDEN', retryable: false }),
      }),
    ]);
    const message = (events[0]!.data as { message: string }).message;
    expect(message).toMatch(/^model endpoint http:\/\/127\.0\.0\.1:\d+ denied: loopback address/);
    expect(modelRequestsFor(task)).toHaveLength(0);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'error', error: { code: 'FORBIDDEN' } });
    await consumerSettled();
  });

  it('a cancel signal during a slow model stream stops the running task with CANCELLED', async () => {
    const task = newTask({ user: 'cancel me while you talk' });
    behaviours.set('cancel me while you talk', () => ({
      content: 'blah '.repeat(400),
      chunkSize: 5,
      chunkDelayMs: 25,
    }));
    await startInstance();
    await publishTask(task);
    const events: TaskEvent[] = [];
    const signal = AbortSignal.timeout(20_000);
    for await (const event of followTaskEvents(js, {
      accountId: ACCOUNT,
      traceId: task.task_meta.trace_id,
      signal,
    })) {
      events.push(event);
      if (events.length === 3) {
        const cancel: CancelSignal = {
          account_id: task.task_meta.account_id,
          trace_id: task.task_meta.trace_id,
          requested_at: new Date().toISOString(),
        };
        client.publish(
          cancelSubject(task.task_meta.account_id, task.task_meta.trace_id),
          JSON.stringify(cancel),
        );
      }
    }
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(events.filter((e) => e.type === 'message_chunk').length).toBeLessThan(400);
    expect(await finalStatusOf(task)).toMatchObject({ status: 'cancelled' });
  });

  it('an executor stopping with a task still running hands it back, and another instance finishes it', async () => {
    const task = newTask({ user: 'outlive a shutdown' });
    let calls = 0;
    behaviours.set('outlive a shutdown', () =>
      ++calls === 1 ? { fault: 'hang' } : { content: 'finished elsewhere' },
    );
    const first = await startInstance({ SHUTDOWN_TIMEOUT_MS: '1000' });
    await publishTask(task);
    await waitFor(() => modelRequestsFor(task).length === 1, {
      description: 'the first attempt to call the model',
    });
    await stopInstance(first);
    await startInstance();
    const events = await eventsOf(task);

    expect(events.filter(isTerminalEvent)).toEqual([
      expect.objectContaining({
        type: 'done',
        attempt: 2,
        data: expect.objectContaining({ message: 'finished elsewhere' }),
      }),
    ]);
  });

  it('a message that is not an AssembledTask is terminated without crashing anything, and the next task runs', async () => {
    await startInstance();
    const payloadCanary = 'canary-garbage-payload-8a1e';
    await js.publish(
      taskAssembledSubject(ACCOUNT),
      JSON.stringify({ task_meta: { trace_id: 'nope' }, secret: payloadCanary }),
    );
    await js.publish(taskAssembledSubject(ACCOUNT), 'not json at all');
    const task = newTask({ user: 'after the garbage' });
    await publishTask(task);
    expect((await eventsOf(task)).at(-1)).toMatchObject({ type: 'done' });
    await consumerSettled();
    expect(logLines.filter((line) => line.includes('terminating an invalid task message'))).toHaveLength(2);
    expect(logLines.filter((line) => line.includes(payloadCanary))).toEqual([]);
  });

  it('a captured task re-published under another account with its tool and model URLs pointed elsewhere ends with TASK_BINDING_MISMATCH, and the new URLs receive nothing', async () => {
    await startInstance();
    const attackerModel = await startScriptedModel({ respond: () => ({ content: 'got your key' }) });
    const attackerApi = await startRecordingApi({
      routes: [{ method: 'GET', path: '/search', reply: () => ({ body: { stolen: true } }) }],
    });
    try {
      const captured = newTask({ user: 'the captured task', tools: [searchTool(api.url)] });
      const thief = 'globex';
      const replayed: AssembledTask = structuredClone(captured);
      replayed.task_meta.account_id = thief;
      replayed.runtime_config.model.base_url = attackerModel.baseUrl;
      replayed.runtime_config.tools = [searchTool(attackerApi.url)];
      await js.publish(taskAssembledSubject(thief), JSON.stringify(replayed), {
        msgID: `replay-${replayed.task_meta.trace_id}`,
      });
      const events: TaskEvent[] = [];
      for await (const event of followTaskEvents(js, {
        accountId: thief,
        traceId: replayed.task_meta.trace_id,
        signal: AbortSignal.timeout(20_000),
      })) {
        events.push(event);
      }
      expect(events).toEqual([
        expect.objectContaining({
          type: 'error',
          data: expect.objectContaining({ code: 'TASK_BINDING_MISMATCH', retryable: false }),
        }),
      ]);
      expect(attackerModel.requests).toEqual([]);
      expect(attackerApi.requests).toEqual([]);
      expect(modelRequestsFor(captured)).toEqual([]);

      // The same holds with only one thing changed: the model endpoint, in the task's own account.
      const retargeted: AssembledTask = structuredClone(captured);
      retargeted.runtime_config.model.base_url = attackerModel.baseUrl;
      await publishTask(retargeted);
      expect((await eventsOf(retargeted)).at(-1)).toMatchObject({
        type: 'error',
        data: { code: 'TASK_BINDING_MISMATCH' },
      });
      expect(attackerModel.requests).toEqual([]);
      await consumerSettled();
    } finally {
      await Promise.all([attackerModel.stop(), attackerApi.stop()]);
    }
  });

  it('no canary secret ever appeared on the wire, in a stored message or in a log line', async () => {
    // Runs last: everything the tests above published was seen by the `>` subscription.
    expect(wire.length).toBeGreaterThan(100);
    const stored: string[] = [];
    for (const stream of [Streams.EVENTS.name, Streams.TASKS.name, 'KV_mesh_tasks']) {
      const info = await jsm.streams.info(stream);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
        const msg = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        if (msg) stored.push(new TextDecoder().decode(msg.data));
      }
    }
    expect(stored.length).toBeGreaterThan(0);
    for (const canary of CANARIES) {
      expect(wire.filter((m) => m.text.includes(canary)).map((m) => m.subject)).toEqual([]);
      expect(stored.filter((text) => text.includes(canary))).toEqual([]);
      expect(logLines.filter((line) => line.includes(canary))).toEqual([]);
    }
  });
});
