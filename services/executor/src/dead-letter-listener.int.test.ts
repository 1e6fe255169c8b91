import {
  AccountUsageStore,
  DeadLetterStore,
  ensureDeadLetterStream,
  ensureMeshStreams,
  ensureTaskAdvisoryStream,
  openMeshBuckets,
  readLastTaskEvent,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  executorConsumer,
  newTraceId,
  Streams,
  taskAssembledSubject,
  utcDay,
  type AssembledTask,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DeadLetterListener,
  DeadLetterRecorder,
  type DeadLetterListenerOptions,
} from './dead-letter-listener.js';
import { ensureExecutorConsumer } from './task-consumer.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const INSTANCE = 'liveinstance01';
const vaultKeys = generateVaultKeyPair('dead-letters-1');
const log = pino({ level: process.env.TEST_LOG ?? 'silent' });

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
let letters: DeadLetterStore;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  await ensureDeadLetterStream(jsm);
  await ensureTaskAdvisoryStream(jsm);
  statuses = new TaskStatusStore((await openMeshBuckets(js)).tasks);
  letters = new DeadLetterStore(js, jsm);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** A task stored in MESH_TASKS whose status says instance INSTANCE runs it; its stream sequence. */
async function runningTask(): Promise<{ task: AssembledTask; streamSeq: number }> {
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: 'http://127.0.0.1:9/v1',
    secrets: {},
    sealFor: vaultKeys,
    userMessage: 'hello',
  });
  const ack = await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
  await statuses.update(ACCOUNT, task.task_meta.trace_id, () => ({
    trace_id: task.task_meta.trace_id,
    account_id: ACCOUNT,
    workflow_id: task.task_meta.workflow_id,
    status: 'running',
    attempt: 2,
    executor_instance: INSTANCE,
    updated_at: new Date().toISOString(),
  }));
  return { task, streamSeq: ack.seq };
}

/** What nats-server sends when the executors' consumer gave up on a message (stored by MESH_TASK_ADVISORIES). */
async function advise(streamSeq: number): Promise<void> {
  await js.publish(
    '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.executor',
    JSON.stringify({ stream: 'MESH_TASKS', consumer: 'executor', stream_seq: streamSeq, deliveries: 2 }),
  );
}

function startListener(
  owners: DeadLetterListenerOptions['owners'],
  accountUsage?: DeadLetterListenerOptions['accountUsage'],
): DeadLetterListener {
  return DeadLetterListener.start({
    js,
    jsm,
    statuses,
    recorder: new DeadLetterRecorder(letters, log),
    log,
    owners,
    ...(accountUsage === undefined ? {} : { accountUsage }),
    sparedCheckMs: 50,
    retryMs: 50,
  });
}

async function taskMessageKept(streamSeq: number): Promise<boolean> {
  return jsm.streams.getMessage(Streams.TASKS.name, { seq: streamSeq }).then(
    (message) => message !== null,
    () => false,
  );
}

async function advisoriesWaiting(): Promise<number> {
  return (await jsm.streams.info(Streams.TASK_ADVISORIES.name)).state.messages;
}

async function endedOutOfDeliveries(traceId: string): Promise<boolean> {
  const last = await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId });
  return last?.type === 'error';
}

describe('a task whose deliveries ran out while an attempt of it lived', () => {
  it('when that attempt dies before ending the task, the task is ended MAX_DELIVER_EXCEEDED and dead-lettered', async () => {
    let attemptLives = true;
    const asked: string[] = [];
    const listener = startListener({
      runs: async (instance) => {
        asked.push(instance);
        return attemptLives;
      },
    });
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await advise(streamSeq);

    // Looked at again and again while the attempt lives, and left alone.
    await waitFor(() => asked.length >= 3, { description: 'the task looked at three times' });
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toBeUndefined();
    expect(await letters.get(ACCOUNT, traceId)).toBeUndefined();
    expect(await taskMessageKept(streamSeq)).toBe(true);

    attemptLives = false;
    await waitFor(() => endedOutOfDeliveries(traceId), { description: 'the task ended' });
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toMatchObject({
      type: 'error',
      data: { code: 'MAX_DELIVER_EXCEEDED' },
    });
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('error');
    expect(await letters.get(ACCOUNT, traceId)).toBeDefined();
    expect(asked.every((instance) => instance === INSTANCE)).toBe(true);
    await waitFor(async () => (await advisoriesWaiting()) === 0 && !(await taskMessageKept(streamSeq)), {
      description: 'the advisory handled and the task message deleted',
    });
    await listener.stop();
  });

  it("when the attempt that dies had used the model, what it spent is added to the account's day as the task ends", async () => {
    const usage = new AccountUsageStore((await openMeshBuckets(js, { only: ['accountUsage'] })).accountUsage);
    const listener = startListener({ runs: async () => false }, usage);
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    const account = task.task_meta.account_id;
    const before = await usage.get(account, utcDay(new Date()));
    // The attempt's one model call, as it wrote it before dying.
    const writer = TaskEventWriter.first(js, { accountId: account, traceId, attempt: 2 });
    const tokens = { prompt_tokens: 700, completion_tokens: 77, total_tokens: 777 };
    await writer.emit('step_finished', {
      step: 1,
      usage: tokens,
      cost_usd: 0.01,
      total_usage: tokens,
      total_cost_usd: 0.01,
    });
    await advise(streamSeq);

    await waitFor(() => endedOutOfDeliveries(traceId), { description: 'the task ended' });
    const day = await waitFor(
      async () => {
        const today = await usage.get(account, utcDay(new Date()));
        return today.tasks > before.tasks && today;
      },
      { description: "the task added to its account's day" },
    );
    expect(day.total_tokens - before.total_tokens).toBe(777);
    expect(day.cost_usd - before.cost_usd).toBeCloseTo(0.01, 10);
    await listener.stop();
  });

  it('when that attempt ends the task itself, the watch stops and nothing is dead-lettered', async () => {
    const asked: string[] = [];
    const listener = startListener({
      runs: async (instance) => {
        asked.push(instance);
        return true;
      },
    });
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await advise(streamSeq);
    await waitFor(() => asked.length >= 1, { description: 'the task looked at' });

    await statuses.update(ACCOUNT, traceId, (current) => ({ ...current!, status: 'done' }));
    await waitFor(async () => (await advisoriesWaiting()) === 0 && !(await taskMessageKept(streamSeq)), {
      description: 'the advisory handled and the task message deleted',
    });
    expect(await letters.get(ACCOUNT, traceId)).toBeUndefined();
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toBeUndefined();
    await listener.stop();
  });

  it('when the executor watching the task stops, another executor keeps watching and ends the task once the attempt dies', async () => {
    let attemptLives = true;
    const askedFirst: string[] = [];
    const first = startListener({
      runs: async (instance) => {
        askedFirst.push(instance);
        return attemptLives;
      },
    });
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await advise(streamSeq);
    await waitFor(() => askedFirst.length >= 1, { description: 'the first executor to look at the task' });
    await first.stop();

    attemptLives = false;
    const second = startListener({ runs: async () => attemptLives });
    await waitFor(() => endedOutOfDeliveries(traceId), {
      description: 'the task ended by the second executor',
    });
    expect(await letters.get(ACCOUNT, traceId)).toBeDefined();
    await waitFor(async () => !(await taskMessageKept(streamSeq)), {
      description: 'the task message deleted',
    });
    await second.stop();
  });
});

describe('a task whose terminal event is stored but whose status write failed on its last delivery', () => {
  it('when the advisory of that delivery is handled, the status record is made to say what the terminal event says, and the task is dead-lettered', async () => {
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    // The last delivery stored MAX_DELIVER_EXCEEDED, then its status write failed (a NATS node down).
    const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 3 });
    const terminal = await writer.emit('error', {
      code: 'MAX_DELIVER_EXCEEDED',
      message: 'the task was delivered 3 times without finishing',
      retryable: false,
    });
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('running');

    const listener = startListener({ runs: async () => false });
    await advise(streamSeq);
    await waitFor(async () => (await statuses.get(ACCOUNT, traceId))?.status === 'error', {
      description: 'the status repaired',
    });
    expect(await statuses.get(ACCOUNT, traceId)).toMatchObject({
      status: 'error',
      last_seq: terminal.seq,
      error: { code: 'MAX_DELIVER_EXCEEDED' },
    });
    // Still one terminal event: the stored one.
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toMatchObject({
      seq: terminal.seq,
    });
    expect(await letters.get(ACCOUNT, traceId)).toBeDefined();
    await waitFor(async () => !(await taskMessageKept(streamSeq)), {
      description: 'the task message deleted',
    });
    await listener.stop();
  });
});

describe('an advisory sent while no executor listened', () => {
  it('when the last delivery of a task died and nats-server gave up on it with no executor connected, an executor started later ends the task and dead-letters it', async () => {
    // The executors' consumer, with one delivery and a short ack wait so the server gives up at once.
    await ensureExecutorConsumer(jsm, {
      maxDeliver: 1,
      maxDeliveries: 1,
      ackWaitMs: 300,
      maxAckPending: 100,
    });
    const { stream, durable_name: durable } = executorConsumer();
    const consumer = await js.consumers.get(stream, durable);
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await statuses.update(ACCOUNT, traceId, (current) => ({
      ...current!,
      executor_instance: 'gone00000001',
    }));

    // The one delivery dies unacknowledged; the next pull makes the server give up and send the advisory.
    const delivery = await consumer.next({ expires: 5_000 });
    expect(delivery?.seq).toBe(streamSeq);
    await waitFor(
      async () => {
        await consumer.next({ expires: 1_000 });
        return (await advisoriesWaiting()) === 1;
      },
      { description: "the server's advisory stored" },
    );

    const listener = startListener({ runs: async () => false });
    await waitFor(() => endedOutOfDeliveries(traceId), { description: 'the task ended' });
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toMatchObject({
      data: { code: 'MAX_DELIVER_EXCEEDED' },
    });
    expect(await letters.get(ACCOUNT, traceId)).toMatchObject({ letter: { source: 'advisory' } });
    await waitFor(async () => !(await taskMessageKept(streamSeq)), {
      description: 'the task message deleted',
    });
    await listener.stop();
  });
});
