// Parking a task on a real NATS server: what is stored, what is written, and a cancel requested while the
// attempt parked, which wins over the wait.
import {
  ensureMeshStreams,
  openMeshBuckets,
  ParkedTaskStore,
  readTaskEventLog,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  newTraceId,
  RESUMED_PARK_HEADER,
  Streams,
  taskAssembledSubject,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assembledTask, searchTool } from '../__fixtures__/tasks.js';
import { SecretScrubber } from '../secrets/index.js';
import { TaskEventSink } from '../task-event-sink.js';
import { parkTask, type ParkingContext } from './task-parking.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('parking-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let store: ParkedTaskStore;
let statuses: TaskStatusStore;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm);
  const buckets = await openMeshBuckets(js, { only: ['tasks', 'parkedTasks'] });
  store = new ParkedTaskStore(buckets.parkedTasks);
  statuses = new TaskStatusStore(buckets.tasks);
});

afterAll(async () => {
  await client?.drain();
  await nats?.stop();
});

/** A task whose first attempt is running and has announced its call `call_1`. */
async function runningTask(status: Partial<TaskStatusRecord> = {}) {
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: 'http://127.0.0.1:9/v1',
    secrets: {},
    sealFor: vaultKeys,
    userMessage: 'pay',
    tools: [searchTool('http://127.0.0.1:9')],
  });
  await statuses.update(ACCOUNT, traceId, () => ({
    trace_id: traceId,
    account_id: ACCOUNT,
    workflow_id: task.task_meta.workflow_id,
    submitted_at: task.task_meta.submitted_at,
    status: 'running',
    attempt: 1,
    updated_at: new Date().toISOString(),
    ...status,
  }));
  const writer = TaskEventWriter.first(js, { accountId: ACCOUNT, traceId, attempt: 1 });
  const sink = new TaskEventSink(writer, () => {}, new SecretScrubber());
  sink.emit({ type: 'tool_start', data: { call_id: 'call_1', tool: 'search', arguments: { q: 'x' } } });
  const context: ParkingContext = {
    store,
    statuses,
    js,
    settings: { defaultTimeoutMs: 60_000, eventRetentionMs: 10_000 },
    now: Date.now,
    statusRecord: (current, change) => ({ ...current!, ...change, updated_at: new Date().toISOString() }),
  };
  const request = {
    task,
    subject: taskAssembledSubject(ACCOUNT),
    attempt: 1,
    sink,
    held: [{ callId: 'call_1', tool: 'search', arguments: { q: 'x' }, need: { reason: 'asks' } }],
  };
  return { task, traceId, context, request };
}

describe('parking a task', () => {
  it('stores the task with a pending approval (expiring within the events’ retention), writes approval_requested with its seq, and sets waiting_approval', async () => {
    const { task, traceId, context, request } = await runningTask();
    const before = Date.now();
    expect(await parkTask(context, request)).toEqual({ waiting: true });

    const entry = await store.get(ACCOUNT, traceId);
    expect(entry?.parked).toMatchObject({ task, subject: taskAssembledSubject(ACCOUNT), attempt: 1 });
    const [approval] = entry!.parked.approvals;
    expect(approval).toMatchObject({
      call_id: 'call_1',
      tool: 'search',
      reason: 'asks',
      state: 'pending',
      seq: 2,
    });
    // The default 60 s is cut to nine tenths of the 10 s retention.
    const waits = Date.parse(approval!.expires_at) - Date.parse(approval!.requested_at);
    expect(waits).toBe(9_000);
    expect(Date.parse(approval!.requested_at)).toBeGreaterThanOrEqual(before - 1);
    const events = await readTaskEventLog(jsm, { accountId: ACCOUNT, traceId, throughSeq: 100 });
    expect(events.map((event) => [event.seq, event.type])).toEqual([
      [1, 'tool_start'],
      [2, 'approval_requested'],
    ]);
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('waiting_approval');
  });

  it('when a cancel was requested while the attempt parked, the cancel wins: the approvals are cancelled and the task queued again to end', async () => {
    const { traceId, context, request } = await runningTask({
      cancel_requested_at: new Date().toISOString(),
    });
    expect(await parkTask(context, request)).toEqual({ waiting: false, cancelled: true });

    const entry = await store.get(ACCOUNT, traceId);
    expect(entry?.parked.approvals.map((approval) => approval.state)).toEqual(['cancelled']);
    expect(entry?.parked.resumed_at).toBeDefined();
    expect((await statuses.get(ACCOUNT, traceId))?.status).toBe('running');
    const queued = await jsm.streams.getMessage(Streams.TASKS.name, {
      last_by_subj: taskAssembledSubject(ACCOUNT),
    });
    expect(queued?.header?.get(RESUMED_PARK_HEADER)).toBe('1');
    expect(queued?.json<{ task_meta: { trace_id: string } }>().task_meta.trace_id).toBe(traceId);
  });
});
