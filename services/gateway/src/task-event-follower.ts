/**
 * One SSE follower's events, as SSE frames: from the gateway's live feed whenever the task's buffer
 * covers the follower's cursor (the seq of the last event it got), otherwise read from JetStream with a
 * consumer of its own (`followTaskEvents`) until the buffer covers it again — a late client, one
 * resuming after its task's buffer was evicted, a task already running when the gateway started, a
 * client too slow for what the buffer still holds, or a feed that stopped. Either way each seq comes
 * once, in order, and the frames end after the terminal event.
 */
import { followTaskEvents, type TaskStatusStore } from '@agentmesh/bus';
import { isTerminalEvent, type TaskEvent } from '@agentmesh/protocol';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { LiveEventFeed } from './live-event-feed.js';
import { formatSseEvent } from './sse-stream.js';
import type { TaskEventBuffer } from './task-event-buffer.js';

export interface FollowTaskEventFramesOptions {
  js: JetStreamClient;
  /** Undefined when the gateway runs without one (SSE_LIVE_FEED=false): every follower reads the stream. */
  feed: LiveEventFeed | undefined;
  accountId: string;
  traceId: string;
  /** Only events with a greater seq are sent (Last-Event-ID). */
  afterSeq: number;
  /** Stops following (the frames end without error). */
  signal: AbortSignal;
  /**
   * Lets a stream read end with `TaskEventsExpiredError` when the task has finished and its events expired
   * meanwhile, instead of waiting for events that cannot come.
   */
  statuses?: TaskStatusStore;
}

export async function* followTaskEventFrames(options: FollowTaskEventFramesOptions): AsyncGenerator<string> {
  const { js, feed, accountId, traceId, signal, statuses } = options;
  if (feed === undefined) {
    for await (const event of followTaskEvents(js, {
      accountId,
      traceId,
      afterSeq: options.afterSeq,
      signal,
      ...(statuses === undefined ? {} : { statuses }),
    }))
      yield formatSseEvent(event);
    return;
  }
  const follower = { cursor: options.afterSeq, buffer: feed.watch(accountId, traceId) };
  try {
    // A failed lookup leaves the buffer undecided: the stream is read, as it always was.
    if (follower.buffer !== undefined) await feed.probe(follower.buffer).catch(() => undefined);
    for (;;) {
      if (signal.aborted) return;
      const live = follower.buffer;
      if (!live?.covers(follower.cursor)) {
        feed.countStreamRead();
        const ended = yield* readStream(feed, js, { accountId, traceId, signal, statuses }, follower);
        if (ended) return;
        continue;
      }
      const next = live.eventAfter(follower.cursor);
      if (next) {
        yield next.frame;
        follower.cursor = next.seq;
        if (next.terminal) return;
      } else if (live.finished && follower.cursor >= live.last) {
        // Resumed after the terminal event: nothing is left (the stream reader ends the same way).
        return;
      } else {
        await live.changed(signal);
      }
    }
  } finally {
    if (follower.buffer !== undefined) feed.release(follower.buffer);
  }
}

interface Follower {
  /** Seq of the last event sent. */
  cursor: number;
  /** The buffer watched (released by whoever replaces it). */
  buffer: TaskEventBuffer | undefined;
}

/**
 * Reads the task's events after the cursor from JetStream, with a consumer of this follower's own,
 * until the task's buffer covers the cursor — checked after each event and whenever the buffer changes,
 * so an idle reader does not outlive the need for it. Returns true when the follower is done (terminal
 * event sent, or stopped); false to go on from memory.
 */
async function* readStream(
  feed: LiveEventFeed,
  js: JetStreamClient,
  {
    accountId,
    traceId,
    signal,
    statuses,
  }: { accountId: string; traceId: string; signal: AbortSignal; statuses: TaskStatusStore | undefined },
  follower: Follower,
): AsyncGenerator<string, boolean> {
  const stopReading = new AbortController();
  const reader = followTaskEvents(js, {
    accountId,
    traceId,
    afterSeq: follower.cursor,
    signal: AbortSignal.any([signal, stopReading.signal]),
    ...(statuses === undefined ? {} : { statuses }),
  });
  let pending = reader.next();
  try {
    for (;;) {
      const watched = currentBuffer(feed, accountId, traceId, follower);
      if (watched?.covers(follower.cursor)) return false;
      let step: IteratorResult<TaskEvent> | 'changed';
      if (watched === undefined) {
        step = await pending;
      } else {
        const stopWaiting = new AbortController();
        step = await Promise.race([
          pending,
          watched.changed(stopWaiting.signal).then(() => 'changed' as const),
        ]);
        stopWaiting.abort();
      }
      if (step === 'changed') continue;
      // The reader only ends early when the follower stops.
      if (step.done) return true;
      const event = step.value;
      yield formatSseEvent(event);
      follower.cursor = event.seq;
      if (isTerminalEvent(event)) return true;
      pending = reader.next();
    }
  } finally {
    // Stopping the reader deletes its consumer; an event it still brings is the buffer's to send.
    stopReading.abort();
    void pending.catch(() => undefined);
    void reader.return(undefined).catch(() => undefined);
  }
}

/** The task's buffer, watched again after an eviction (or once the feed is back). */
function currentBuffer(
  feed: LiveEventFeed,
  accountId: string,
  traceId: string,
  follower: Follower,
): TaskEventBuffer | undefined {
  if (follower.buffer !== undefined && !follower.buffer.dropped) return follower.buffer;
  if (follower.buffer !== undefined) feed.release(follower.buffer);
  follower.buffer = feed.watch(accountId, traceId);
  return follower.buffer;
}
