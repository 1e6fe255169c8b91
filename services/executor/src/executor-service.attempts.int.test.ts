// Attempts that overlap on a real NATS server: a delivery that reaches its `running` write after another
// attempt finished the task, and (further down) a server that stalls past ack_wait while a tool runs and an
// executor process frozen past ack_wait. The status record must end as the terminal event says and stay so,
// and overlapping deliveries must not run the task's work again.
import { ensureMeshStreams, followTaskEvents, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  taskEventLogSubject,
  type AssembledTask,
  type TaskEvent,
} from '@agentmesh/protocol';
import { fileURLToPath } from 'node:url';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  startServiceProcess,
  waitFor,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startHoldingLink, type HoldingLink } from './__fixtures__/holding-link.js';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { userText } from './__fixtures__/model-requests.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-attempts-01';
const SEARCH_KEY = 'canary-search-key-attempts-02';
const ACK_WAIT_MS = 1_500;
const vaultKeys = generateVaultKeyPair('exec-attempts-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let statuses: TaskStatusStore;
let model: ScriptedModel;
let api: RecordingApi;
/** Held search calls by their query: a test answers them when it chooses. */
const heldSearches = new Map<string, Array<() => void>>();
/** Every executor's log lines (JSON), for the tests that wait for an executor to have decided something. */
const logLines: string[] = [];
const cleanups: Array<() => Promise<void>> = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    // Tasks whose message starts with "search:" search once, then answer; the others answer at once.
    respond: (request) =>
      userText(request).startsWith('search:') && !request.body.messages.some((m) => m.role === 'tool')
        ? { toolCalls: [{ id: 'call_1', name: 'search', arguments: { q: userText(request) } }] }
        : { content: `answer to ${userText(request)}`, chunkSize: 8 },
  });
  api = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/search',
        reply: async (request) => {
          const q = String(request.query['q']);
          await new Promise<void>((resolve) =>
            heldSearches.set(q, [...(heldSearches.get(q) ?? []), resolve]),
          );
          return { body: { hits: [q] } };
        },
      },
    ],
  });
  await ensureMeshStreams(await jetstreamManager(client));
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  // Each test waits for what its own executors log.
  logLines.length = 0;
});

afterAll(async () => {
  await client?.drain();
  for (const release of [...heldSearches.values()].flat()) release();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

const executorEnv = {
  ACK_WAIT_MS: String(ACK_WAIT_MS),
  ACK_PROGRESS_MS: '300',
  MAX_CONCURRENT_TASKS: '1',
};

async function startExecutor(
  natsUrl = nats.url,
  env: Record<string, string> = {},
): Promise<{ stop(): Promise<void> }> {
  const executor = await startInProcessExecutor({
    natsUrl,
    vaultKeys,
    env: { ...executorEnv, ...env },
    logLines,
  });
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= executor.stop());
  cleanups.push(stop);
  return { stop };
}

function newTask(user: string): AssembledTask {
  return assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY, SEARCH_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: [searchTool(api.url)],
  });
}

async function submit(task: AssembledTask): Promise<void> {
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
}

async function eventsOf(task: AssembledTask): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(30_000),
  }))
    events.push(event);
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

describe('the status record never moves backwards', () => {
  it('when a first delivery reaches its running write after a redelivery finished the task, the status ends done and stays done, and the late delivery calls no model', async () => {
    const user = 'late first delivery';
    const task = newTask(user);
    // Executor A takes the first delivery, then everything it sends is held: its status read and write,
    // its heartbeats. The server hands the task to B after ack_wait; B finishes it.
    const link: HoldingLink = await startHoldingLink(nats, taskAssembledSubject(ACCOUNT));
    const late = await startExecutor(link.url);
    // Runs before the executor stops (cleanups run last first): a held executor cannot drain.
    cleanups.push(async () => {
      link.release();
      await late.stop();
      await link.close();
    });
    await submit(task);
    await link.holding;
    await startExecutor();
    const events = await eventsOf(task);
    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done', attempt: 2 })]);
    // B writes the final status once its terminal event is stored.
    await waitFor(async () => (await statuses.get(ACCOUNT, task.task_meta.trace_id))?.status === 'done');

    // A goes on now: its read finds the task done. Stopping it waits for its attempt to be over.
    link.release();
    await late.stop();

    expect(await statuses.get(ACCOUNT, task.task_meta.trace_id)).toMatchObject({
      status: 'done',
      attempt: 2,
    });
    expect(model.requests.filter((request) => userText(request) === user)).toHaveLength(1);
  });
});

describe('deliveries that overlap a live attempt', () => {
  // The question to the running instance times out after one heartbeat period; its answer waits in the
  // link until the test has seen the redelivery, so the period is the longest ack_wait allows.
  const ASKED_IN_TIME = { ACK_PROGRESS_MS: String(ACK_WAIT_MS / 2) };
  const searchesFor = (q: string) => api.requests.filter((request) => request.query['q'] === q);
  /** Whether an executor logged `msg` (one task runs at a time in these tests). */
  const logged = (msg: string) => logLines.some((line) => line.includes(`"msg":"${msg}"`));
  /** The type of the task's last stored event (MESH_EVENTS keeps them on `mesh.eventlog.…`), if any. */
  const lastEventType = async (traceId: string) => {
    const last = await (
      await jetstreamManager(client)
    ).streams
      .getMessage('MESH_EVENTS', { last_by_subj: taskEventLogSubject(ACCOUNT, traceId) })
      .catch(() => null);
    return last?.json<TaskEvent>().type;
  };
  const deliveredCount = async () =>
    (await (await jetstreamManager(client)).consumers.info('MESH_TASKS', 'executor')).delivered.consumer_seq;

  it('when the NATS server stalls for three ack_waits while a tool runs, the task ends done in one attempt, the tool ran once, and nothing is dead-lettered', async () => {
    const user = 'search: through a server stall';
    const task = newTask(user);
    const traceId = task.task_meta.trace_id;
    // The executor that runs the task reaches the server through a link, so the test can make certain of
    // the order the chaos run saw when the server woke: its redelivery timer ran before it read the
    // heartbeats the executor had sent during the stall.
    const link = await startHoldingLink(nats);
    cleanups.push(() => link.close());
    await startExecutor(link.url, ASKED_IN_TIME);
    await submit(task);
    await waitFor(() => heldSearches.has(user), { timeoutMs: 20_000 });
    const delivered = await deliveredCount();

    await nats.pause();
    link.hold();
    // The fault itself: the server hears nothing for three ack_waits, so misses the attempt's heartbeats.
    await new Promise((resolve) => setTimeout(resolve, 3 * ACK_WAIT_MS));
    await nats.unpause();
    // Started now, the other executor has no pull left over from the stall, which the server could hand
    // the task to after its client gave up on it.
    await startExecutor(nats.url, ASKED_IN_TIME);
    await waitFor(async () => (await deliveredCount()) > delivered, {
      timeoutMs: 20_000,
      description: 'a redelivery after the stall',
    });
    link.release();

    // The redelivery must leave the live attempt alone (before the fence it resumed the task and ran the
    // search a second time).
    await waitFor(
      () =>
        logged('another attempt of this task is alive; leaving the delivery to it') ||
        searchesFor(user).length > 1,
      { timeoutMs: 20_000, description: 'the redelivery settled' },
    );
    for (const release of heldSearches.get(user) ?? []) release();
    const events = await eventsOf(task);

    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done', attempt: 1 })]);
    expect(new Set(events.map((event) => event.attempt))).toEqual(new Set([1]));
    expect(searchesFor(user)).toHaveLength(1);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'done');
  });

  it("when stalls alone run a task's deliveries out while its attempt lives, that attempt still ends it done and nothing is dead-lettered", async () => {
    const user = 'search: through two server stalls';
    const task = newTask(user);
    const traceId = task.task_meta.trace_id;
    // JetStream gives up after two deliveries: the second stall's redelivery is its MAX_DELIVERIES advisory.
    const limits = { ...ASKED_IN_TIME, MAX_DELIVER: '1', MAX_DELIVERIES: '2' };
    const link = await startHoldingLink(nats);
    cleanups.push(() => link.close());
    await startExecutor(link.url, limits);
    await submit(task);
    await waitFor(() => heldSearches.has(user), { timeoutMs: 20_000 });
    const advisories = client.subscribe('$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.executor');
    cleanups.push(async () => advisories.unsubscribe());
    const advised = (async () => {
      for await (const advisory of advisories) {
        if (advisory.json<{ deliveries: number }>().deliveries >= 2) return true;
      }
      return false;
    })();
    await client.flush();

    const stall = async (heard: () => Promise<unknown>) => {
      await nats.pause();
      link.hold();
      await new Promise((resolve) => setTimeout(resolve, 3 * ACK_WAIT_MS));
      await nats.unpause();
      await heard();
      link.release();
    };
    const delivered = await deliveredCount();
    await stall(async () => {
      // Started after the first stall, as in the test above: no pull of it is left over from the stall.
      await startExecutor(nats.url, limits);
      await waitFor(async () => (await deliveredCount()) > delivered, { timeoutMs: 20_000 });
    });
    await waitFor(() => logged('another attempt of this task is alive; leaving the delivery to it'), {
      timeoutMs: 20_000,
    });
    await stall(() => advised);
    await waitFor(
      async () =>
        logged(
          'a task ran out of deliveries while an attempt of it lives; leaving the task to that attempt',
        ) || (await lastEventType(traceId)) === 'error',
      { timeoutMs: 20_000, description: 'the advisory handled' },
    );
    for (const release of heldSearches.get(user) ?? []) release();
    const events = await eventsOf(task);

    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done', attempt: 1 })]);
    expect(searchesFor(user)).toHaveLength(1);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'done');
    const letter = await (
      await jetstreamManager(client)
    ).streams
      .getMessage('MESH_DEAD_LETTERS', { last_by_subj: `mesh.dead.${ACCOUNT}.${traceId}` })
      .catch(() => null);
    expect(letter).toBeNull();
  });
});

describe('an executor that wakes after losing its task', () => {
  const entry = fileURLToPath(new URL('./index.ts', import.meta.url));

  it('when an executor process frozen past ack_wait wakes after another finished its task, it makes no model call and the task ends once, done', async () => {
    const user = 'search: while its executor was frozen';
    const task = newTask(user);
    const traceId = task.task_meta.trace_id;
    const asked = () => model.requests.filter((request) => userText(request) === user).length;
    const frozen = await startServiceProcess({
      entry,
      env: {
        NATS_URL: nats.url,
        VAULT_PRIVATE_KEYS: `${vaultKeys.kid}:${vaultKeys.privateKey}`,
        OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
        MODEL_ALLOW_HOSTS: '127.0.0.1',
        PULL_EXPIRES_MS: '1000',
        ...executorEnv,
      },
    });
    cleanups.push(async () => {
      frozen.child.kill('SIGCONT');
      await frozen.stop('SIGKILL');
    });
    await frozen.waitForLog((line) => line.msg === 'service ready');
    // A tenant's follower on core NATS, subscribed before the submission (the recipe tenants are given).
    const followed: TaskEvent[] = [];
    const follower = client.subscribe(`mesh.events.${ACCOUNT}.${traceId}`, {
      callback: (_error, message) => {
        followed.push(message.json<TaskEvent>());
      },
    });
    cleanups.push(async () => follower.unsubscribe());
    await client.flush();
    await submit(task);
    // Its first model call answered, it calls the tool, and stands still while the call is out.
    await waitFor(() => heldSearches.get(user)?.length === 1, { timeoutMs: 20_000 });
    expect(asked()).toBe(1);
    frozen.child.kill('SIGSTOP');

    // The other executor takes the task over after ack_wait (the frozen one does not answer whether it
    // runs it), runs the call again, and finishes.
    await startExecutor();
    await waitFor(() => heldSearches.get(user)?.length === 2, { timeoutMs: 20_000 });
    heldSearches.get(user)?.[1]?.();
    const events = await eventsOf(task);
    expect(events.filter(isTerminalEvent)).toEqual([expect.objectContaining({ type: 'done', attempt: 2 })]);
    expect(asked()).toBe(2);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'done');

    // The frozen executor's call returns while it stands still; then it wakes.
    heldSearches.get(user)?.[0]?.();
    frozen.child.kill('SIGCONT');
    await frozen.waitForLog(
      (line) =>
        line.msg ===
          'the executor stood still and lost the task to another attempt; stopping before its next call' ||
        line.msg === "another executor wrote this task's events; leaving the task to it",
    );

    expect(asked()).toBe(2);
    expect(await statuses.get(ACCOUNT, traceId)).toMatchObject({ status: 'done', attempt: 2 });
    const stored = await eventsOf(task);
    expect(stored.filter(isTerminalEvent)).toHaveLength(1);
    // The follower saw exactly the stored events, in order, once: nothing the woken executor tried to write.
    await client.flush();
    expect(followed.map((event) => [event.seq, event.attempt, event.type])).toEqual(
      stored.map((event) => [event.seq, event.attempt, event.type]),
    );
  });
});
