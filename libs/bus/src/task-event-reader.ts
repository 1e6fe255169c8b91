/**
 * Reads a task's events from JetStream in order: everything already stored, then live ones as they
 * arrive, ending after the terminal event. Used by the gateway's SSE stream and by NATS clients that
 * want replay (`afterSeq` resumes after a given event, as `Last-Event-ID` does). Given the status store, a
 * finished task whose events have expired ends with {@link TaskEventsExpiredError} instead of waiting
 * forever.
 */
import {
  isFinalTaskStatus,
  isTerminalEvent,
  Streams,
  TaskEvent,
  taskEventLogSubject,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { TaskEventsExpiredError } from './errors.js';
import { decodeJson } from './json.js';
import { getLastStoredEvent } from './stored-message.js';
import type { TaskStatusStore } from './stores/task-status-store.js';

/**
 * How long one pull waits for events. nats.js also paces its recovery by it: after a reconnect to a
 * server whose JetStream is still starting, it checks the consumer again only after this long, and it
 * notices a lost pull after two missed heartbeats (half of this each). Its default (30 s) left a live
 * follower frozen for ~40 s after a NATS restart; 5 s costs one pull request per follower every 5 s.
 */
const FOLLOW_PULL_EXPIRES_MS = 5_000;

export interface FollowTaskEventsOptions {
  accountId: string;
  traceId: string;
  /** Only events with a greater seq are yielded. */
  afterSeq?: number;
  /** Stops following (the iteration ends without error). */
  signal?: AbortSignal;
  /**
   * The task status store: when given and the stream holds no event of the task, a final status means
   * the events expired, and the iteration throws {@link TaskEventsExpiredError}. Without it such a
   * follow waits forever.
   */
  statuses?: TaskStatusStore;
}

/**
 * How many events of the task MESH_EVENTS holds now. Stream info filtered on the task's subject, which
 * every user reading the stream may ask (a last-by-subject get is not granted to all).
 */
export async function storedTaskEventCount(
  jsm: JetStreamManager,
  accountId: string,
  traceId: string,
): Promise<number> {
  const subject = taskEventLogSubject(accountId, traceId);
  const info = await jsm.streams.info(Streams.EVENTS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

/**
 * The task's final status when it has finished and MESH_EVENTS holds none of its events any more;
 * undefined while events are stored or the task is not finished. The terminal event is stored before the
 * final status is written, so a final status with no stored event means they expired.
 */
export async function expiredTaskEvents(
  jsm: JetStreamManager,
  statuses: TaskStatusStore,
  accountId: string,
  traceId: string,
  known?: TaskStatusRecord,
): Promise<TaskStatusRecord | undefined> {
  const status = known ?? (await statuses.get(accountId, traceId));
  if (status === undefined || !isFinalTaskStatus(status.status)) return undefined;
  return (await hasStoredTaskEvents(jsm, accountId, traceId)) ? undefined : status;
}

/**
 * Whether MESH_EVENTS holds any event of the task: one message get of its subject's last message. Not a
 * subject-filtered stream info, which nats-server answers by walking every subject of the stream under
 * its lock (a cost that grows with the tasks kept).
 */
export async function hasStoredTaskEvents(
  jsm: JetStreamManager,
  accountId: string,
  traceId: string,
): Promise<boolean> {
  return (await getLastStoredEvent(jsm, taskEventLogSubject(accountId, traceId))) !== null;
}

export async function* followTaskEvents(
  js: JetStreamClient,
  { accountId, traceId, afterSeq = 0, signal, statuses }: FollowTaskEventsOptions,
): AsyncGenerator<TaskEvent> {
  const subject = taskEventLogSubject(accountId, traceId);
  if (signal?.aborted) return;
  const consumer = await js.consumers.get(Streams.EVENTS.name, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({ expires: FOLLOW_PULL_EXPIRES_MS });
  if (statuses !== undefined) {
    // Checked once the consumer is reading: an event stored from now on reaches it either way.
    let expired: TaskStatusRecord | undefined;
    try {
      expired = await expiredTaskEvents(await js.jetstreamManager(false), statuses, accountId, traceId);
    } catch (error) {
      void messages.close().then(() => consumer.delete().catch(() => undefined));
      throw error;
    }
    if (expired !== undefined) {
      void messages.close().then(() => consumer.delete().catch(() => undefined));
      throw new TaskEventsExpiredError(traceId, expired);
    }
  }
  const stop = (): void => void messages.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const message of messages) {
      const event = decodeJson(TaskEvent, message.data, `${subject}#${message.seq}`);
      if (event.seq > afterSeq) yield event;
      if (isTerminalEvent(event)) return;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    // Not awaited: closing waits for the pending pull when nobody iterates any more. The server-side
    // consumer is deleted too, or it would linger until its inactivity threshold (minutes).
    void messages.close().then(() => consumer.delete().catch(() => undefined));
  }
}
