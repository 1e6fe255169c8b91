/**
 * The gateway's one live feed of task events: a single ordered JetStream consumer on MESH_EVENTS
 * (`mesh.eventlog.>`, the subjects it stores; from the stream's end when the gateway starts) whose events
 * are kept in memory per task ({@link TaskEventBuffer}) and fanned out to every SSE follower of that task.
 * A JetStream consumer and not a core subscription to the republished `mesh.events.>`: it resumes from
 * its last stream sequence after a gap, where a core subscription would miss what was republished
 * meanwhile.
 *
 * Memory is bounded: at most `maxTasks` buffers and `maxBytes` of frames in all (least recently
 * updated buffers are evicted first), `taskMaxBytes` per task (its oldest events are trimmed), and a
 * finished task's buffer goes `finishedTtlMs` after its terminal event. Followers the buffer no longer
 * covers read the stream (see `task-event-follower.ts`). If the consumer stops for good, every buffer
 * is dropped (followers fall back to the stream) and the feed starts again where it stopped.
 *
 * Every terminal event it takes in is also told to `onTerminal`, whether or not anyone follows the task,
 * and every event to the account's followers ({@link followAccount}: `GET /v1/events`).
 */
import { randomBytes } from 'node:crypto';
import { getLastStoredEvent } from '@agentmesh/bus';
import {
  EventType,
  isTerminalEvent,
  parseEventLogSubject,
  Streams,
  taskEventLogSubject,
  type TaskEvent,
  Wildcards,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import {
  DeliverPolicy,
  type Consumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import { formatSseFrame } from './sse-stream.js';
import { TaskEventBuffer } from './task-event-buffer.js';

export interface LiveEventFeedLimits {
  /** Task buffers held at once. */
  maxTasks: number;
  /** Bytes of SSE frames held over all tasks. */
  maxBytes: number;
  /** Bytes of SSE frames held for one task; its oldest events go first. */
  taskMaxBytes: number;
  /** How long a finished task's buffer stays after its terminal event (for followers arriving late). */
  finishedTtlMs: number;
}

export interface LiveEventFeedDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  limits: LiveEventFeedLimits;
  log: Logger;
  /** Told of every task's terminal event the feed takes in (running-task slots free on it). */
  onTerminal?: (accountId: string, traceId: string) => void;
}

/** The feed's own accounting, for tests and operators. */
export interface LiveEventFeedStats {
  /** The consumer is running (followers can be served from memory). */
  live: boolean;
  tasks: number;
  bytes: number;
  /** Events held over all tasks. */
  events: number;
  /** Highest `tasks` and `bytes` after any event was taken in, and the most bytes one task held. */
  peakTasks: number;
  peakBytes: number;
  peakTaskBytes: number;
  /** Followers watching a buffer now. */
  followers: number;
  /** Events the consumer delivered since the gateway started. */
  received: number;
  /** Times a follower had to read the stream (late, resuming, evicted, or behind). */
  streamReads: number;
}

/**
 * Pull size and expiry of the feed's consumer. The expiry also paces nats.js's recovery (a lost pull is
 * noticed after two missed heartbeats, half of it each): 5 s as for a single task's reader.
 */
const FEED_BATCH = 1_000;
const FEED_PULL_EXPIRES_MS = 5_000;
const RESTART_BACKOFF_MS = [250, 1_000, 5_000] as const;
/** Consumer notifications that mean the feed's events wait (see watchStatus). */
const FEED_STALLS: ReadonlySet<string> = new Set([
  'heartbeats_missed',
  'exceeded_limits',
  'consumer_deleted',
  'consumer_not_found',
  'ordered_consumer_recreated',
  'no_responders',
]);

/** Told of each stored event of an account, as its SSE frame, in the order the stream stored them. */
export type AccountEventListener = (frame: string) => void;

export class LiveEventFeed {
  private readonly buffers = new Map<string, TaskEventBuffer>();
  private readonly accountListeners = new Map<string, Set<AccountEventListener>>();
  /** Finished buffers in the order their terminal event came in (so also of their expiry). */
  private finished: TaskEventBuffer[] = [];
  private readonly limits: LiveEventFeedLimits;
  private running: { consumer: Consumer; messages: ConsumerMessages } | undefined;
  private nextStreamSeq = 1;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly sweeper: NodeJS.Timeout;
  private heldBytes = 0;
  private counters = {
    peakTasks: 0,
    peakBytes: 0,
    peakTaskBytes: 0,
    followers: 0,
    received: 0,
    streamReads: 0,
  };

  private constructor(private readonly deps: LiveEventFeedDeps) {
    this.limits = {
      ...deps.limits,
      taskMaxBytes: Math.min(deps.limits.taskMaxBytes, deps.limits.maxBytes),
    };
    this.sweeper = setInterval(
      () => this.sweepFinished(),
      Math.max(10, Math.min(deps.limits.finishedTtlMs, 1_000)),
    );
    this.sweeper.unref();
  }

  /** Starts the feed at the end of MESH_EVENTS: events stored from now on are fanned out. */
  static async start(deps: LiveEventFeedDeps): Promise<LiveEventFeed> {
    const feed = new LiveEventFeed(deps);
    try {
      const info = await deps.jsm.streams.info(Streams.EVENTS.name);
      feed.nextStreamSeq = info.state.last_seq + 1;
      await feed.open();
    } catch (error) {
      await feed.stop();
      throw error;
    }
    return feed;
  }

  /**
   * The buffer of a task, created empty when there is none, with one more follower counted on it;
   * give it back with {@link release}. Undefined while the consumer is not running.
   */
  watch(accountId: string, traceId: string): TaskEventBuffer | undefined {
    if (this.running === undefined) return undefined;
    const subject = taskEventLogSubject(accountId, traceId);
    let buffer = this.buffers.get(subject);
    if (buffer === undefined) {
      buffer = new TaskEventBuffer(subject);
      this.buffers.set(subject, buffer);
      this.enforceLimits();
    }
    buffer.followers++;
    this.counters.followers++;
    return buffer;
  }

  /**
   * Tells `listener` of every event of `accountId` the feed takes in from now on, across the feed's
   * restarts (it starts again where it stopped, so none is skipped); answers how to stop.
   */
  followAccount(accountId: string, listener: AccountEventListener): () => void {
    let listeners = this.accountListeners.get(accountId);
    if (listeners === undefined) {
      listeners = new Set();
      this.accountListeners.set(accountId, listeners);
    }
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.accountListeners.get(accountId) === listeners) {
        this.accountListeners.delete(accountId);
      }
    };
  }

  release(buffer: TaskEventBuffer): void {
    buffer.followers--;
    this.counters.followers--;
    if (buffer.followers > 0 || buffer.dropped || this.buffers.get(buffer.subject) !== buffer) return;
    // Nobody needs a buffer that holds nothing (another follower probes again), nor a finished one
    // whose time is up (the sweep kept it for its followers).
    const expired =
      buffer.finishedAt !== undefined && Date.now() - buffer.finishedAt >= this.limits.finishedTtlMs;
    if (buffer.held === 0 || expired) this.evict(buffer);
  }

  /**
   * Decides whether a buffer that has no event yet covers its task from the start: it does when the
   * stream holds no event of the task now, since every later one reaches the buffer, which was
   * registered before the lookup. When the task has events, the buffer stays undecided and its
   * followers read the stream until the buffer takes in an event. (A last-by-subject get, which the
   * server answers from its per-subject index: a stream info filtered on the subject walks every
   * subject of the stream under its lock, about 1.5 ms at 20,000 tasks and growing with them, on every
   * SSE request.)
   */
  async probe(buffer: TaskEventBuffer): Promise<void> {
    if (buffer.from !== undefined || buffer.dropped) return;
    buffer.probe ??= this.hasStoredEvent(buffer.subject).then(
      (stored) => {
        if (!stored) buffer.startAfter(0, false);
      },
      (error: unknown) => {
        buffer.probe = undefined;
        throw error;
      },
    );
    await buffer.probe;
  }

  /** Counts a follower reading the stream (see {@link LiveEventFeedStats.streamReads}). */
  countStreamRead(): void {
    this.counters.streamReads++;
  }

  stats(): LiveEventFeedStats {
    let events = 0;
    for (const buffer of this.buffers.values()) events += buffer.held;
    return {
      live: this.running !== undefined,
      tasks: this.buffers.size,
      bytes: this.heldBytes,
      events,
      ...this.counters,
    };
  }

  /** Stops the consumer (deleting it on the server) and drops every buffer. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweeper);
    clearTimeout(this.restartTimer);
    const running = this.running;
    this.running = undefined;
    this.dropAll();
    if (running) {
      await running.messages.close().catch(() => undefined);
      await running.consumer.delete().catch(() => undefined);
    }
  }

  private async open(): Promise<void> {
    const consumer = await this.deps.js.consumers.get(Streams.EVENTS.name, {
      name_prefix: `gateway_feed_${randomBytes(6).toString('hex')}`,
      filter_subjects: Wildcards.ALL_EVENT_LOG,
      // Not DeliverPolicy.New: nats.js re-creates an ordered consumer from the last stream sequence it
      // delivered, which for "new" before any delivery is 0, so a reset would replay the whole stream.
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.nextStreamSeq,
    });
    if (this.stopped) {
      await consumer.delete().catch(() => undefined);
      return;
    }
    const messages = await consumer.consume({ max_messages: FEED_BATCH, expires: FEED_PULL_EXPIRES_MS });
    this.running = { consumer, messages };
    void this.watchStatus(messages);
    void this.pump(consumer, messages);
  }

  private async pump(consumer: Consumer, messages: ConsumerMessages): Promise<void> {
    let failure: unknown;
    try {
      for await (const message of messages) this.take(message);
    } catch (error) {
      failure = error;
    }
    if (this.stopped || this.running?.messages !== messages) return;
    this.running = undefined;
    this.dropAll();
    void consumer.delete().catch(() => undefined);
    this.deps.log.warn(
      { err: failure, next_stream_seq: this.nextStreamSeq },
      'live event feed stopped; event streams read JetStream until it is back',
    );
    this.scheduleRestart(0);
  }

  /**
   * Logs what holds the feed's events back: nats.js leaves a pull that the server refused (409) or lost
   * to wait for two missed idle heartbeats (FEED_PULL_EXPIRES_MS in all) before it pulls again, and every
   * follower of the feed waits with it. Seen once in the paced bench: every stream of a wave ended 5 s
   * after its terminal event was stored.
   */
  private async watchStatus(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const status of messages.status()) {
        if (FEED_STALLS.has(status.type))
          this.deps.log.warn({ feed_status: status }, 'live event feed stalled');
      }
    } catch {
      // The iterator ends with the consumer; the pump reports why.
    }
  }

  private scheduleRestart(attempt: number): void {
    if (this.stopped) return;
    const delay = RESTART_BACKOFF_MS[Math.min(attempt, RESTART_BACKOFF_MS.length - 1)];
    this.restartTimer = setTimeout(() => {
      this.open().then(
        () => {
          if (this.running)
            this.deps.log.info({ next_stream_seq: this.nextStreamSeq }, 'live event feed back');
        },
        (error: unknown) => {
          this.deps.log.warn({ err: error }, 'live event feed could not start again');
          this.scheduleRestart(attempt + 1);
        },
      );
    }, delay);
    this.restartTimer.unref();
  }

  /** Takes one stored event into its task's buffer and wakes the task's followers. */
  private take(message: JsMsg): void {
    this.nextStreamSeq = message.seq + 1;
    this.counters.received++;
    const subject = message.subject;
    const task = parseEventLogSubject(subject);
    if (task === undefined) return;
    const stored = storedEventOf(message.data, task.traceId);
    if (stored === undefined) {
      // A corrupt event is the stream's to report: followers read it there and fail as they always did.
      const buffer = this.buffers.get(subject);
      if (buffer) this.evict(buffer);
      return;
    }
    const { event, frame } = stored;
    if (isTerminalEvent(event)) this.deps.onTerminal?.(task.accountId, task.traceId);
    for (const listener of this.accountListeners.get(task.accountId) ?? []) listener(frame);
    let buffer = this.buffers.get(subject);
    if (buffer === undefined) {
      buffer = new TaskEventBuffer(subject);
    } else {
      // Re-inserted so the map's order is least recently updated first.
      this.buffers.delete(subject);
    }
    this.buffers.set(subject, buffer);
    const wasFinished = buffer.finished;
    this.heldBytes += buffer.append({
      seq: event.seq,
      terminal: isTerminalEvent(event),
      frame,
    });
    if (buffer.finished && !wasFinished) {
      buffer.finishedAt = Date.now();
      this.finished.push(buffer);
    }
    while (buffer.bytes > this.limits.taskMaxBytes) this.heldBytes -= buffer.dropOldest();
    this.counters.peakTaskBytes = Math.max(this.counters.peakTaskBytes, buffer.bytes);
    this.enforceLimits();
    buffer.wake();
  }

  /** Evicts the least recently updated buffers until both global bounds hold. */
  private enforceLimits(): void {
    for (const buffer of this.buffers.values()) {
      if (this.buffers.size <= this.limits.maxTasks && this.heldBytes <= this.limits.maxBytes) break;
      this.evict(buffer);
    }
    this.counters.peakTasks = Math.max(this.counters.peakTasks, this.buffers.size);
    this.counters.peakBytes = Math.max(this.counters.peakBytes, this.heldBytes);
  }

  /** Drops finished buffers whose time is up, unless followers still read them (see {@link release}). */
  private sweepFinished(): void {
    const now = Date.now();
    let expired = 0;
    for (const buffer of this.finished) {
      if (now - (buffer.finishedAt ?? now) < this.limits.finishedTtlMs) break;
      expired++;
      if (buffer.followers === 0 && this.buffers.get(buffer.subject) === buffer) this.evict(buffer);
    }
    if (expired > 0) this.finished = this.finished.slice(expired);
  }

  private evict(buffer: TaskEventBuffer): void {
    if (this.buffers.get(buffer.subject) === buffer) this.buffers.delete(buffer.subject);
    this.heldBytes -= buffer.drop();
  }

  private dropAll(): void {
    for (const buffer of this.buffers.values()) buffer.drop();
    this.buffers.clear();
    this.finished = [];
    this.heldBytes = 0;
  }

  private async hasStoredEvent(subject: string): Promise<boolean> {
    return (await getLastStoredEvent(this.deps.jsm, subject)) !== null;
  }
}

const EVENT_TYPES: ReadonlySet<string> = new Set(Object.values(EventType));
const decoder = new TextDecoder();

/**
 * A stored event as the feed takes it in: its envelope checked (an object of this task, an integer
 * `seq`, a known type, a `data` object) and its frame made from the stored JSON text as it is.
 * Events are written from typed data by the executors and the assembler (the bus's TaskEventWriter, which
 * does not parse them either); a schema parse and a second serialisation of every event of every task,
 * followed or not, were a measurable share of a gateway's CPU. Followers reading the stream (a replay, a
 * resume) still get each event through the schema. Undefined for anything else.
 */
export function storedEventOf(
  data: Uint8Array,
  traceId: string,
): { event: TaskEvent; frame: string } | undefined {
  let text: string;
  let parsed: unknown;
  try {
    text = decoder.decode(data);
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  const envelope = parsed as Record<string, unknown>;
  const { seq, type } = envelope;
  if (
    envelope['trace_id'] !== traceId ||
    !Number.isSafeInteger(seq) ||
    (seq as number) < 1 ||
    typeof type !== 'string' ||
    !EVENT_TYPES.has(type) ||
    typeof envelope['data'] !== 'object' ||
    envelope['data'] === null
  ) {
    return undefined;
  }
  const event = parsed as TaskEvent;
  // One `data:` line: JSON text from JSON.stringify has no line break, but any other text is written again.
  const json = /[\r\n]/.test(text) ? JSON.stringify(event) : text;
  return { event, frame: formatSseFrame(event.seq, event.type, json) };
}
