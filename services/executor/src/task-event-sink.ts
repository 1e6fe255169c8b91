/**
 * Publishes one attempt's events in the order they happen, with the task's secrets scrubbed out of each.
 * The writer numbers each event from the last one it saw acknowledged (that is its fence against a stale
 * attempt), so publishes are chained one after another here; the first publish that fails stops the chain
 * (later events would leave a gap) and is reported once.
 *
 * Text deltas (`message_chunk`, `tool_thinking`, and `tool_call_delta` per call) are coalesced: a model streams hundreds of them per
 * answer, and each would be one JetStream publish, ack and delivery. The first delta after a quiet spell
 * leaves at once (a follower sees the answer start without delay) and opens a window; what arrives while
 * the window is open leaves as one event when it closes, or as soon as it reaches the size limit. Any
 * other event, and the terminal one, first publishes what is pending, so the order stays. While the chain
 * is backed up (NATS slow or away) pending text keeps growing into fewer, larger events, and
 * {@link TaskEventSink.backpressure} tells the model stream's reader to wait.
 *
 * Write-ahead: {@link TaskEventSink.emitDurably} queues an event like `emit` and resolves once it is
 * stored, so the loop runs a tool only after its `tool_start` is (the chain stores events in order).
 *
 * Scrubbing: the coalesced text of each delta type (of each tool call) goes through a scrubbing stream, since a secret may be
 * split across deltas: an end that could be the beginning of a secret is held back and published with the
 * next text, and whatever is held is published before any other event and before the terminal one. Every
 * other event's data is scrubbed whole: tool arguments, results and errors, the final message, errors.
 */
import type { TaskEventWriter } from '@agentmesh/bus';
import type { EventData, TerminalEvent } from '@agentmesh/protocol';
import type { LoopOutcome, ProgressEvent } from './agent-loop.js';
import type { SubtaskEvent } from './tools/sub-agent/index.js';
import { ScrubbingStream, type SecretScrubber } from './secrets/index.js';

type DeltaType = 'message_chunk' | 'tool_thinking';
/** The delta types gathered into windows: text, and tool call arguments (one call at a time). */
type GatheredType = DeltaType | 'tool_call_delta';
/** The call a `tool_call_delta`'s text belongs to. */
type ToolCallRef = Omit<EventData<'tool_call_delta'>, 'delta'>;

/**
 * What an attempt emits besides the loop's progress: `attempt_started`, first of a resumed attempt,
 * `approval_requested` of a parking one, and the sub-task events of an agent tool's call.
 */
export type SinkEvent =
  | ProgressEvent
  | SubtaskEvent
  | { type: 'attempt_started'; data: EventData<'attempt_started'> }
  | { type: 'approval_requested'; data: EventData<'approval_requested'> };

export interface DeltaCoalescing {
  /** How long deltas gather into one event after the one that left at once. */
  windowMs: number;
  /** Pending text of this many characters leaves at once, window or not. */
  maxChars: number;
}

/** Publishes queued but not yet acknowledged beyond which the model stream waits. */
const BACKED_UP_PUBLISHES = 8;

/** The part of the event writer the sink uses. */
export type EventAppender = Pick<TaskEventWriter, 'emit' | 'seq'>;

export class TaskEventSink {
  #chain: Promise<unknown> = Promise.resolve();
  #queued = 0;
  #drained: { promise: Promise<void>; resolve: () => void } | undefined;
  #failure: unknown;
  #failed = false;
  readonly #scrubbing: Record<DeltaType, ScrubbingStream>;
  /** One scrubbing stream per tool call whose argument text is streaming, by call id. */
  readonly #callScrubbing = new Map<string, { call: ToolCallRef; stream: ScrubbingStream }>();
  /** Raw (unscrubbed) text gathered in the open window, of one delta type (and one tool call). */
  #pending: { type: GatheredType; text: string; call?: ToolCallRef } | undefined;
  #window: NodeJS.Timeout | undefined;

  constructor(
    private readonly writer: EventAppender,
    /** Called once, with the error of the first publish that failed. */
    private readonly onFailure: (error: unknown) => void,
    /** The task's secrets; values it learns while the task runs count from then on. */
    private readonly secrets: SecretScrubber,
    private readonly coalescing: DeltaCoalescing = { windowMs: 50, maxChars: 4096 },
  ) {
    this.#scrubbing = {
      tool_thinking: new ScrubbingStream(secrets),
      message_chunk: new ScrubbingStream(secrets),
    };
  }

  /** Queues a progress event; never throws (a failure goes to `onFailure`). */
  readonly emit = (event: SinkEvent): void => {
    if (this.#failed) return;
    if (event.type === 'message_chunk' || event.type === 'tool_thinking') {
      this.#gather(event.type, event.data.delta);
      return;
    }
    if (event.type === 'tool_call_delta') {
      const { delta, ...call } = event.data;
      this.#gather('tool_call_delta', delta, call);
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
    clearTimeout(this.#window);
    this.#window = undefined;
    this.#pending = undefined;
  }

  #gather(type: GatheredType, delta: string, call?: ToolCallRef): void {
    if (delta === '') return;
    const pending = this.#pending;
    if (
      pending !== undefined &&
      (pending.type !== type ||
        pending.call?.call_id !== call?.call_id ||
        pending.text.length + delta.length > this.coalescing.maxChars)
    )
      this.#flushPending();
    if (this.#pending === undefined)
      this.#pending = { type, text: delta, ...(call === undefined ? {} : { call }) };
    else this.#pending.text += delta;
    if (this.#window === undefined) {
      this.#flushPending();
      this.#openWindow();
    } else if (this.#pending.text.length >= this.coalescing.maxChars) {
      this.#flushPending();
    }
  }

  #openWindow(): void {
    this.#window = setTimeout(() => {
      this.#window = undefined;
      if (this.#pending === undefined || this.#failed) return;
      // A publish still under way: the text keeps gathering (up to the size limit) into one later event.
      if (this.#queued === 0) this.#flushPending();
      this.#openWindow();
    }, this.coalescing.windowMs);
  }

  /** Publishes the pending text (what the scrubber lets through of it). */
  #flushPending(): void {
    const pending = this.#pending;
    if (pending === undefined) return;
    this.#pending = undefined;
    if (pending.call !== undefined) {
      const { call } = pending;
      let scrubbing = this.#callScrubbing.get(call.call_id);
      if (scrubbing === undefined) {
        scrubbing = { call, stream: new ScrubbingStream(this.secrets) };
        this.#callScrubbing.set(call.call_id, scrubbing);
      }
      this.#queueCallDelta(call, scrubbing.stream.push(pending.text));
      return;
    }
    const type = pending.type as DeltaType;
    this.#queueDelta(type, this.#scrubbing[type].push(pending.text));
  }

  /** Publishes all pending and held text and closes the window: a later delta starts a fresh text. */
  #endDeltas(): void {
    this.#flushPending();
    clearTimeout(this.#window);
    this.#window = undefined;
    for (const type of ['tool_thinking', 'message_chunk'] as const)
      this.#queueDelta(type, this.#scrubbing[type].end());
    // A call's arguments are whole by its tool_start, the next other event: each stream ends here.
    for (const { call, stream } of this.#callScrubbing.values()) this.#queueCallDelta(call, stream.end());
    this.#callScrubbing.clear();
  }

  #queueCallDelta(call: ToolCallRef, delta: string): void {
    if (delta !== '') this.#queue('tool_call_delta', { ...this.secrets.scrubDeep(call), delta });
  }

  #queueDelta(type: DeltaType, delta: string): void {
    if (delta !== '') this.#queue(type, { delta });
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
    }
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
