/**
 * The lost-task watch on real JetStream: a received message that leaves MESH_TASKS with nothing started
 * (what nats-server 2.9 does when it loses one after a node fault, done here by taking it off the queue
 * by hand) is published again under its re-drive id; a task still queued, waiting behind others, or
 * started is not.
 */
import {
  encodeJson,
  ensureMeshStreams,
  hasStoredTaskEvents,
  openMeshBuckets,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  Consumers,
  EventType,
  redrivenTaskMsgId,
  Streams,
  taskAssembledSubject,
  TaskStatus,
  taskKey,
  taskReceivedSubject,
} from '@agentmesh/protocol';
import { createLogger } from '@agentmesh/runtime';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import {
  AckPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { isStillQueued, redriveTask } from './lost-task-redrive.js';
import { LostTaskWatch } from './lost-task-watch.js';
import { TaskQueueDepth } from './task-queue-depth.js';

const ACCOUNT = 'acme';
const AFTER_MS = 60_000;

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm, { replicas: 1 });
  for (const { durable_name, filter_subject } of [Consumers.ASSEMBLER, Consumers.EXECUTOR]) {
    await jsm.consumers.add(Streams.TASKS.name, {
      durable_name,
      filter_subject,
      ack_policy: AckPolicy.Explicit,
    });
  }
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
});
afterAll(async () => {
  await client?.close();
  await nats?.stop();
});
beforeEach(async () => {
  await jsm.streams.purge(Streams.TASKS.name);
});

let now = 0;
function watchOnRealJetStream(): LostTaskWatch {
  const queueDepth = new TaskQueueDepth({
    consumers: jsm.consumers,
    maxAgeMs: 0,
    log: createLogger({ service: 'gateway', level: 'silent' }),
  });
  return new LostTaskWatch({
    afterMs: AFTER_MS,
    // Rounds are run by the test (check()); the timer's pace does not matter here.
    everyMs: 3_600_000,
    maxBytes: 1 << 20,
    maxRedrives: 3,
    status: (accountId, traceId) => statuses.get(accountId, traceId),
    hasEvents: (accountId, traceId) => hasStoredTaskEvents(jsm, accountId, traceId),
    stillQueued: (seq) => isStillQueued(jsm, seq),
    waiting: async () => (await queueDepth.read()).reduce((sum, depth) => sum + depth.pending, 0),
    redrive: (task, n) => redriveTask(js, task, n),
    now: () => now,
  });
}

/** A task as the gateway leaves it: `queued`, its received message published; the watch told. */
async function publishedTask(
  watch: LostTaskWatch,
): Promise<{ traceId: string; message: Uint8Array; seq: number }> {
  const traceId = randomBytes(16).toString('hex');
  await statuses.create({
    trace_id: traceId,
    account_id: ACCOUNT,
    workflow_id: 'agent',
    status: TaskStatus.QUEUED,
    attempt: 0,
    updated_at: new Date().toISOString(),
  });
  const message = encodeJson({ task_meta: { trace_id: traceId, account_id: ACCOUNT }, marker: traceId });
  const ack = await js.publish(taskReceivedSubject(ACCOUNT), message, { msgID: taskKey(ACCOUNT, traceId) });
  watch.published({ accountId: ACCOUNT, traceId, message }, ack.seq);
  return { traceId, message, seq: ack.seq };
}

/** Checks once at each multiple of AFTER_MS from `first` to `last`. */
async function checkRounds(watch: LostTaskWatch, first: number, last: number): Promise<void> {
  for (let round = first; round <= last; round++) {
    now = AFTER_MS * round;
    await watch.check();
  }
}

/** The queue loses the message: it leaves the stream, and no consumer has it pending. */
async function loseFromQueue(seq: number): Promise<void> {
  await jsm.streams.deleteMessage(Streams.TASKS.name, seq, false);
}

async function storedWithMsgId(msgId: string): Promise<Uint8Array | undefined> {
  const info = await jsm.streams.info(Streams.TASKS.name);
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, { seq }).catch(() => null);
    if (stored?.header?.get('Nats-Msg-Id') === msgId) return stored.data;
  }
  return undefined;
}

it('when the queue lost an accepted task that nothing started, two checks later it is published again under its re-drive id, byte for byte', async () => {
  now = 0;
  const watch = watchOnRealJetStream();
  const task = await publishedTask(watch);
  await loseFromQueue(task.seq);

  now = AFTER_MS - 1;
  await watch.check();
  now = AFTER_MS;
  await watch.check();
  // One check found it lost: a delivery to a dead or frozen executor may still be handed on.
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, task.traceId, 1))).toBeUndefined();
  now += 10_000;
  await watch.check();
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, task.traceId, 1))).toEqual(task.message);
  // Watched again from the re-drive: the new copy is still queued, so nothing more is published.
  now += 2 * AFTER_MS;
  await watch.check();
  await watch.check();
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, task.traceId, 2))).toBeUndefined();
  expect(watch.size).toBe(1);
  watch.stop();
});

it('when the task still waits in the queue, or other tasks wait undelivered, it is not published again', async () => {
  now = 0;
  const watch = watchOnRealJetStream();
  const waiting = await publishedTask(watch);
  const lost = await publishedTask(watch);
  await loseFromQueue(lost.seq);
  // `waiting` is still queued: a backlog, in which `lost` may be waiting as an assembled copy too.
  await checkRounds(watch, 1, 4);
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, lost.traceId, 1))).toBeUndefined();
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, waiting.traceId, 1))).toBeUndefined();

  // An assembled task waiting for an executor is a backlog too.
  await jsm.streams.deleteMessage(Streams.TASKS.name, waiting.seq, false);
  watch.ended(ACCOUNT, waiting.traceId);
  await js.publish(taskAssembledSubject(ACCOUNT, []), '{}');
  await checkRounds(watch, 5, 8);
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, lost.traceId, 1))).toBeUndefined();
  watch.stop();
});

it('when an attempt started the task (an event stored, or its status moved on), it is no longer watched', async () => {
  now = 0;
  const watch = watchOnRealJetStream();
  const withEvent = await publishedTask(watch);
  const running = await publishedTask(watch);
  await loseFromQueue(withEvent.seq);
  await loseFromQueue(running.seq);
  const writer = await TaskEventWriter.open(js, jsm, {
    accountId: ACCOUNT,
    traceId: withEvent.traceId,
    attempt: 1,
  });
  await writer.emit(EventType.MESSAGE_CHUNK, { delta: 'started' });
  await statuses.update(ACCOUNT, running.traceId, (record) =>
    record ? { ...record, status: TaskStatus.RUNNING, attempt: 1 } : undefined,
  );

  now = AFTER_MS;
  await watch.check();
  expect(watch.size).toBe(0);
  now += AFTER_MS;
  await watch.check();
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, withEvent.traceId, 1))).toBeUndefined();
  expect(await storedWithMsgId(redrivenTaskMsgId(ACCOUNT, running.traceId, 1))).toBeUndefined();
  watch.stop();
});
