/**
 * A task whose events outlived MESH_EVENTS' retention while its status record stayed (as with a status
 * bucket created under an older, longer TTL): a follower given the status store ends with a clear error
 * carrying the final status instead of waiting forever; a task that has not finished is not affected.
 */
import { EventType, TaskStatus, type TaskEvent, type TaskStatusRecord } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskEventsExpiredError } from './errors.js';
import { ensureMeshStreams, openMeshBuckets } from './resources.js';
import { TaskStatusStore } from './stores/task-status-store.js';
import { followTaskEvents, storedTaskEventCount } from './task-event-reader.js';
import { TaskEventWriter } from './task-event-writer.js';

const EVENTS_MAX_AGE_MS = 1_500;
const account = 'acme';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
let traceCounter = 0;
const nextTrace = (): string => (++traceCounter).toString(16).padStart(32, 'e');

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  // The status bucket first, with a long TTL; then the event stream with a short max age.
  const { tasks } = await openMeshBuckets(js, { only: ['tasks'], taskRetentionMs: 10 * 60_000 });
  statuses = new TaskStatusStore(tasks);
  await ensureMeshStreams(jsm, { taskRetentionMs: EVENTS_MAX_AGE_MS });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

function record(traceId: string, status: TaskStatusRecord['status'], lastSeq?: number): TaskStatusRecord {
  return {
    trace_id: traceId,
    account_id: account,
    workflow_id: 'wf',
    status,
    attempt: 1,
    updated_at: new Date().toISOString(),
    ...(lastSeq === undefined ? {} : { last_seq: lastSeq }),
  };
}

describe('following a task whose events have expired', () => {
  it('when the task finished and its events are gone, the follower throws TaskEventsExpiredError with the final status', async () => {
    const traceId = nextTrace();
    const writer = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    await writer.emit(EventType.MESSAGE_CHUNK, { delta: 'hi' });
    await writer.emit(EventType.DONE, {
      message: 'hi',
      steps: 1,
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      duration_ms: 5,
    });
    await statuses.create(record(traceId, TaskStatus.DONE, 2));
    await waitFor(async () => (await storedTaskEventCount(jsm, account, traceId)) === 0, {
      timeoutMs: 10_000,
      description: 'the events to expire',
    });

    const follow = async (): Promise<TaskEvent[]> => {
      const events: TaskEvent[] = [];
      for await (const event of followTaskEvents(js, { accountId: account, traceId, statuses }))
        events.push(event);
      return events;
    };
    const failure = await follow().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(TaskEventsExpiredError);
    expect(failure).toMatchObject({
      code: 'EVENTS_EXPIRED',
      retryable: false,
      finalStatus: { status: 'done', last_seq: 2 },
    });
  });

  it('a running task with no event stored yet is not affected: the follower waits and gets its events', async () => {
    const traceId = nextTrace();
    await statuses.create(record(traceId, TaskStatus.RUNNING));
    const events: TaskEvent[] = [];
    const following = (async () => {
      for await (const event of followTaskEvents(js, { accountId: account, traceId, statuses }))
        events.push(event);
    })();
    const writer = await TaskEventWriter.open(js, jsm, { accountId: account, traceId, attempt: 1 });
    await writer.emit(EventType.ERROR, { code: 'CANCELLED', message: 'cancelled', retryable: false });
    await following;
    expect(events.map((event) => event.type)).toEqual(['error']);
  });
});
