/**
 * Publishes one attempt's events in the order they happen, with the task's secrets scrubbed out of each.
 * The writer numbers each event from the last one it saw acknowledged (that is its fence against a stale
 * attempt), so publishes are chained one after another here; the first publish that fails stops the chain
 * (later events would leave a gap) and is reported once.
 *
 * Text deltas (`message_chunk`, `tool_thinking`, and `tool_call_delta` per call) are coalesced, by size and adaptively: a model streams
 * hundreds of them per answer, and each would be one JetStream publish, ack and delivery (most of a task's
 * bus cost). The first delta of each stream in a turn (the answer's text, the reasoning) leaves at once, so
 * a follower sees it start without delay, and opens a window; later deltas gather until the text reaches
 * {@link DeltaCoalescing.minChars} or the window ends, whichever comes first, and leave as one event. The
 * window grows with the tasks this executor runs ({@link coalescingWindowMs}), and the size threshold with
 * it ({@link coalescingMinChars}): a quiet executor streams smoothly, a busy one publishes fewer, larger
 * events, and a task's events follow its text's length, not its duration.
 * While the task's previous publish is not acknowledged yet, text keeps gathering (up to
 * {@link DeltaCoalescing.maxChars}) and leaves once it is: a slow bus makes fewer, larger events. Any other
 * event, and the terminal one, first publishes what is pending, so the order stays; while the chain backs
 * up further, {@link TaskEventSink.backpressure} tells the model stream's reader to wait.
 *
 * A new delta kind plugs in with one entry in {@link DELTA_STREAMS}: which stream a delta belongs to
 * (deltas of one stream join into one event; the rest of the first delta's data goes with it).
 *
 * Write-ahead: {@link TaskEventSink.emitDurably} queues an event like `emit` and resolves once it is
 * stored, so the loop runs a tool only after its `tool_start` is (the chain stores events in order).
 *
 * Scrubbing: the coalesced text of each delta type goes through a scrubbing stream, since a secret may be
 * split across deltas: an end that could be the beginning of a secret is held back and published with the
 * next text, and whatever is held is published before any other event and before the terminal one. Every
 * other event's data is scrubbed whole: tool arguments, results and errors, the final message, errors.
 */
import type { TaskEventWriter } from '@agentmesh/bus';
import type { EventData, TerminalEvent } from '@agentmesh/protocol';
import type { LoopOutcome, ProgressEvent } from './agent-loop.js';
import type { SubtaskEvent } from './tools/sub-agent/index.js';
import { ScrubbingStream, type SecretScrubber } from './secrets/index.js';

/**
 * The delta kinds, each mapped to the stream a delta belongs to: deltas of one stream join into one event
 * (their texts concatenated, the rest of the data as the stream's first delta had it), and each stream has
 * its own scrubbing stream. A kind streamed per item (say, per tool call) names the item in its key.
 */
const DELTA_STREAMS = {
  message_chunk: (_data: EventData<'message_chunk'>) => 'message_chunk',
  tool_thinking: (_data: EventData<'tool_thinking'>) => 'tool_thinking',
  // A tool call's arguments, per call: two calls streamed in one turn never join into one event.
  tool_call_delta: (data: EventData<'tool_call_delta'>) => `tool_call_delta:${data.call_id}`,
} satisfies { [T in SinkEvent['type']]?: (data: Extract<SinkEvent, { type: T }>['data']) => string };

type DeltaType = keyof typeof DELTA_STREAMS;
type DeltaEvent = Extract<SinkEvent, { type: DeltaType }>;

function isDelta(event: SinkEvent): event is DeltaEvent {
  return Object.hasOwn(DELTA_STREAMS, event.type);
}

function streamKey(event: DeltaEvent): string {
  return (DELTA_STREAMS[event.type] as (data: DeltaEvent['data']) => string)(event.data);
}

/**
 * What an attempt emits besides the loop's progress: `attempt_started`, first of a resumed attempt,
 * `approval_requested` of a parking one, and the sub-task events of an agent tool's call.
 */
export type SinkEvent =
  | ProgressEvent
  | SubtaskEvent
  | { type: 'attempt_started'; data: EventData<'attempt_started'> }
  | { type: 'approval_requested'; data: EventData<'approval_requested'> };

/** How streamed deltas gather into events (executor config `EVENT_DELTA_*`, README "What a task costs"). */
export interface DeltaCoalescing {
  /** How long deltas gather after the one that left at once, while this executor runs one task. */
  windowMs: number;
  /** How long they gather once it runs {@link busyTasks} tasks or more; in between, the window grows linearly. */
  busyWindowMs: number;
  /** Tasks in flight on this executor at which the window reaches {@link busyWindowMs}. */
  busyTasks: number;
  /**
   * Gathered text of this many characters leaves before its window ends (once the previous publish is
   * stored), with the quiet window; it grows in proportion to the window (coalescingMinChars).
   */
  minChars: number;
  /** The longest text event: gathered text of this many characters leaves at once, publish under way or not. */
  maxChars: number;
  /** Tasks in flight on this executor now; without it the executor counts as running one. */
  load?: () => number;
}

export const DEFAULT_DELTA_COALESCING: DeltaCoalescing = {
  windowMs: 250,
  busyWindowMs: 2_000,
  busyTasks: 8,
  minChars: 256,
  maxChars: 4_096,
};

/** The window of a stream that starts now, for `tasks` in flight on this executor. */
export function coalescingWindowMs(coalescing: DeltaCoalescing, tasks: number): number {
  const { windowMs, busyWindowMs, busyTasks } = coalescing;
  if (busyWindowMs <= windowMs) return windowMs;
  const busy = busyTasks <= 1 ? 1 : Math.min(1, Math.max(0, (tasks - 1) / (busyTasks - 1)));
  return Math.round(windowMs + (busyWindowMs - windowMs) * busy);
}

/**
 * The size threshold that goes with a window: it grows in proportion, so a busy executor's fast streams
 * (a model well above the pace the window was set for) also make fewer, larger events; at most `maxChars`.
 */
export function coalescingMinChars(coalescing: DeltaCoalescing, windowMs: number): number {
  const { minChars, maxChars } = coalescing;
  return Math.min(maxChars, Math.round((minChars * windowMs) / coalescing.windowMs));
}

/** Publishes queued but not yet acknowledged beyond which the model stream waits. */
const BACKED_UP_PUBLISHES = 8;

/** The part of the event writer the sink uses. */
export type EventAppender = Pick<TaskEventWriter, 'emit' | 'seq'>;

/** A stream's gathered raw (unscrubbed) text, with the rest of its first delta's data. */
interface Pending {
  readonly type: DeltaType;
  readonly key: string;
  readonly data: DeltaEvent['data'];
  text: string;
}

export class TaskEventSink {
  #chain: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #drained: { promise: Promise<void>; resolve: () => void } | undefined;
  #failure: unknown;
  #failed = false;
  readonly #coalescing: DeltaCoalescing;
  /** The scrubbing stream of each delta stream started since the last other event, in their order. */
  readonly #scrubbing = new Map<
    string,
    { type: DeltaType; data: DeltaEvent['data']; stream: ScrubbingStream }
  >();
  #pending: Pending | undefined;
  /** Open while deltas stream: a delta arriving then gathers instead of leaving at once. */
  #windowOpen = false;
  #window: NodeJS.Timeout | undefined;
  /** The size threshold of the window open now (coalescingMinChars). */
  #minChars: number;
  /** The window ended while a publish was under way: the pending text leaves once that publish is stored. */
  #due = false;

  constructor(
    private readonly writer: EventAppender,
    /** Called once, with the error of the first publish that failed. */
    private readonly onFailure: (error: unknown) => void,
    /** The task's secrets; values it learns while the task runs count from then on. */
    private readonly secrets: SecretScrubber,
    coalescing: Partial<DeltaCoalescing> = {},
  ) {
    this.#coalescing = { ...DEFAULT_DELTA_COALESCING, ...coalescing };
    this.#minChars = this.#coalescing.minChars;
  }

  /** Queues a progress event; never throws (a failure goes to `onFailure`). */
  readonly emit = (event: SinkEvent): void => {
    if (this.#failed) return;
    if (isDelta(event)) {
      this.#gather(event);
      return;
    }
    this.#endDeltas();
    this.#queue(event.type, this.secrets.scrubDeep(event.data));
  };

  /**
   * Queues an event like {@link emit}; resolves once it is stored (acknowledged by JetStream), rejects
   * with the publish error when it, or an event before it, could not be (`onFailure` is told as well).
   */
  readonly emitDurably = (event: SinkEvent): Promise<void> => {
    if (this.#failed) return Promise.reject(asError(this.#failure));
    this.emit(event);
    // A text event is gathered, not queued: what it joins is stored with the next flush, not awaited here.
    return this.#chain.then(() => {
      if (this.#failed) throw asError(this.#failure);
    });
  };

  /**
   * Undefined while publishing keeps up; otherwise a promise that resolves once the queued publishes have
   * drained (or failed). The model stream's reader awaits it, so a slow bus slows the read, not memory.
   */
  readonly backpressure = (): Promise<void> | undefined => {
    if (this.#failed || this.#queued < BACKED_UP_PUBLISHES) return undefined;
    if (this.#drained === undefined) {
      let resolve = (): void => {};
      const promise = new Promise<void>((done) => (resolve = done));
      this.#drained = { promise, resolve };
    }
    return this.#drained.promise;
  };

  /** Publishes the terminal event after everything queued before it; throws when it cannot be written. */
  async finish(outcome: LoopOutcome): Promise<TerminalEvent> {
    this.#endDeltas();
    await this.#chain;
    if (this.#failed) throw this.#failure;
    const data = this.secrets.scrubDeep(outcome.data);
    // `type` and `data` come from one outcome, a pairing TypeScript cannot follow through the call.
    return (await this.writer.emit(outcome.type, data as never)) as TerminalEvent;
  }

  /** Resolves once every event queued so far is stored; rejects when one could not be. */
  async stored(): Promise<void> {
    this.#endDeltas();
    await this.#chain;
    if (this.#failed) throw asError(this.#failure);
  }

  get seq(): number {
    return this.writer.seq;
  }

  /** Stops the window timer of an attempt that ends without {@link finish} (handed back, lost stream). */
  dispose(): void {
    this.#closeWindow();
    this.#pending = undefined;
  }

  #gather(event: DeltaEvent): void {
    const delta = event.data.delta;
    if (delta === '') return;
    const key = streamKey(event);
    const { maxChars } = this.#coalescing;
    let pending = this.#pending;
    if (pending !== undefined && (pending.key !== key || pending.text.length + delta.length > maxChars)) {
      this.#flushPending();
      pending = undefined;
    }
    // The first delta of a stream in this turn leaves at once, and (re)starts the window.
    const first = !this.#scrubbing.has(key);
    if (first) {
      this.#scrubbing.set(key, {
        type: event.type,
        data: event.data,
        stream: new ScrubbingStream(this.secrets),
      });
    }
    if (pending === undefined)
      this.#pending = pending = { type: event.type, key, data: event.data, text: delta };
    else pending.text += delta;
    if (first || !this.#windowOpen || pending.text.length >= maxChars) this.#flushAndRestart();
    else if (pending.text.length >= this.#minChars && this.#queued === 0) this.#flushAndRestart();
  }

  #flushAndRestart(): void {
    this.#flushPending();
    this.#closeWindow();
    this.#openWindow();
  }

  #openWindow(): void {
    this.#windowOpen = true;
    const ms = coalescingWindowMs(this.#coalescing, this.#coalescing.load?.() ?? 1);
    this.#minChars = coalescingMinChars(this.#coalescing, ms);
    this.#window = setTimeout(() => {
      this.#window = undefined;
      if (this.#failed) return;
      if (this.#pending === undefined) {
        // A quiet spell: the next delta leaves at once.
        this.#windowOpen = false;
        return;
      }
      // A publish still under way: the text keeps gathering, and leaves once that publish is stored.
      if (this.#queued > 0) this.#due = true;
      else this.#flushAndRestart();
    }, ms);
  }

  #closeWindow(): void {
    clearTimeout(this.#window);
    this.#window = undefined;
    this.#windowOpen = false;
    this.#due = false;
  }

  /** Publishes the pending text (what the scrubber lets through of it). */
  #flushPending(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    const scrubbing = this.#scrubbing.get(pending.key);
    // Every pending stream has its scrubbing stream (made with its first delta), until #endDeltas.
    if (scrubbing !== undefined)
      this.#queueDelta(pending.type, pending.data, scrubbing.stream.push(pending.text));
  }

  /** Publishes all pending and held text and closes the window: a later delta starts a fresh text. */
  #endDeltas(): void {
    this.#flushPending();
    this.#closeWindow();
    for (const { type, data, stream } of this.#scrubbing.values()) this.#queueDelta(type, data, stream.end());
    this.#scrubbing.clear();
  }

  #queueDelta(type: DeltaType, data: DeltaEvent['data'], delta: string): void {
    if (delta === '') return;
    // A kind with more than its text (an item's id or name) has that part scrubbed like any event's data.
    const { delta: _text, ...rest } = data;
    const fields = Object.keys(rest).length === 0 ? rest : this.secrets.scrubDeep(rest);
    this.#queue(type, { ...fields, delta } as DeltaEvent['data']);
  }

  #queue(type: SinkEvent['type'], data: SinkEvent['data']): void {
    this.#queued += 1;
    this.#chain = this.#chain.then(() => this.#publish(type, data));
  }

  async #publish(type: SinkEvent['type'], data: SinkEvent['data']): Promise<void> {
    try {
      if (this.#failed) return;
      // `type` and `data` come from one SinkEvent, a pairing TypeScript cannot follow through the call.
      await this.writer.emit(type, data as never);
    } catch (error) {
      this.#failed = true;
      this.#failure = error;
      this.dispose();
      this.onFailure(error);
    } finally {
      this.#queued -= 1;
      if (this.#drained !== undefined && (this.#failed || this.#queued === 0)) {
        this.#drained.resolve();
        this.#drained = undefined;
      }
      if (!this.#failed && this.#queued === 0) this.#afterStored();
    }
  }

  /** The chain is idle: text that waited for it (its window ended, or it reached minChars) leaves now. */
  #afterStored(): void {
    const pending = this.#pending;
    if (pending === undefined || !this.#windowOpen) return;
    if (this.#due || pending.text.length >= this.#minChars) this.#flushAndRestart();
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
