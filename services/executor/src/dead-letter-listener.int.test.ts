import {
  DeadLetterStore,
  ensureDeadLetterStream,
  ensureMeshStreams,
  openMeshBuckets,
  readLastTaskEvent,
  TaskStatusStore,
} from '@agentmesh/bus';
import { newTraceId, taskAssembledSubject, type AssembledTask } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeadLetterListener, DeadLetterRecorder } from './dead-letter-listener.js';
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

/** What nats-server sends when the executors' consumer gave up on a message. */
function advise(streamSeq: number): void {
  nc.publish(
    '$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.executor',
    JSON.stringify({ stream: 'MESH_TASKS', consumer: 'executor', stream_seq: streamSeq, deliveries: 2 }),
  );
}

describe('a task whose deliveries ran out while an attempt of it lived', () => {
  it('when that attempt dies before ending the task, the task is ended MAX_DELIVER_EXCEEDED and dead-lettered', async () => {
    let attemptLives = true;
    const asked: string[] = [];
    const listener = DeadLetterListener.start({
      nc,
      js,
      jsm,
      statuses,
      recorder: new DeadLetterRecorder(letters, log),
      log,
      owners: {
        runs: async (instance) => {
          asked.push(instance);
          return attemptLives;
        },
      },
      sparedCheckMs: 50,
    });
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await nc.flush();
    advise(streamSeq);

    await waitFor(() => listener.watching === 1 && asked.length >= 3, { description: 'the task watched' });
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toBeUndefined();
    expect(await letters.get(ACCOUNT, traceId)).toBeUndefined();

    attemptLives = false;
    await waitFor(() => listener.watching === 0, { description: 'the watch to end' });
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toMatchObject({
      type: 'error',
      data: { code: 'MAX_DELIVER_EXCEEDED' },
    });
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('error');
    expect(await letters.get(ACCOUNT, traceId)).toBeDefined();
    expect(asked.every((instance) => instance === INSTANCE)).toBe(true);
    await listener.stop();
  });

  it('when that attempt ends the task itself, the watch stops and nothing is dead-lettered', async () => {
    const listener = DeadLetterListener.start({
      nc,
      js,
      jsm,
      statuses,
      recorder: new DeadLetterRecorder(letters, log),
      log,
      owners: { runs: async () => true },
      sparedCheckMs: 50,
    });
    const { task, streamSeq } = await runningTask();
    const traceId = task.task_meta.trace_id;
    await nc.flush();
    advise(streamSeq);
    await waitFor(() => listener.watching === 1, { description: 'the task watched' });

    await statuses.update(ACCOUNT, traceId, (current) => ({ ...current!, status: 'done' }));
    await waitFor(() => listener.watching === 0, { description: 'the watch to end' });
    expect(await letters.get(ACCOUNT, traceId)).toBeUndefined();
    expect(await readLastTaskEvent(jsm, { accountId: ACCOUNT, traceId })).toBeUndefined();
    await listener.stop();
  });
});
