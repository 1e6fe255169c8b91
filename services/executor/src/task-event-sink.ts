/**
 * Publishes one attempt's events in the order they happen, with the task's secrets scrubbed out of each.
 * Deltas arrive from synchronous stream callbacks while the previous publish is still waiting for its
 * JetStream ack, and the writer numbers each event from the last one it saw acknowledged, so publishes are
 * chained one after another here. The first publish that fails stops the chain (later events would leave
 * a gap) and is reported once.
 *
 * Scrubbing: text deltas (`message_chunk`, `tool_thinking`) go through a scrubbing stream each, since a
 * secret may be split across deltas: a delta's end that could be the beginning of a secret is held back
 * and published with the next delta, and whatever is held is published before any other event (so the
 * order stays) and before the terminal one. A delta that is all held back publishes nothing. Every other
 * event's data is scrubbed whole: tool arguments, results and errors, the final message, error messages.
 */
import type { TaskEventWriter } from '@agentmesh/bus';
import type { TaskEvent } from '@agentmesh/protocol';
import type { LoopOutcome, ProgressEvent } from './agent-loop.js';
import { ScrubbingStream, type SecretScrubber } from './secrets/index.js';

type DeltaType = 'message_chunk' | 'tool_thinking';

export class TaskEventSink {
  #chain: Promise<unknown> = Promise.resolve();
  #failure: unknown;
  #failed = false;
  readonly #deltas: Record<DeltaType, ScrubbingStream>;

  constructor(
    private readonly writer: TaskEventWriter,
    /** Called once, with the error of the first publish that failed. */
    private readonly onFailure: (error: unknown) => void,
    /** The task's secrets; values it learns while the task runs count from then on. */
    private readonly secrets: SecretScrubber,
  ) {
    this.#deltas = {
      tool_thinking: new ScrubbingStream(secrets),
      message_chunk: new ScrubbingStream(secrets),
    };
  }

  /** Queues a progress event; never throws (a failure goes to `onFailure`). */
  readonly emit = (event: ProgressEvent): void => {
    if (this.#failed) return;
    if (event.type === 'message_chunk' || event.type === 'tool_thinking') {
      this.#queueDelta(event.type, this.#deltas[event.type].push(event.data.delta));
      return;
    }
    this.#flushDeltas();
    this.#queue(event.type, this.secrets.scrubDeep(event.data));
  };

  /** Publishes the terminal event after everything queued before it; throws when it cannot be written. */
  async finish(outcome: LoopOutcome): Promise<TaskEvent> {
    this.#flushDeltas();
    await this.#chain;
    if (this.#failed) throw this.#failure;
    const data = this.secrets.scrubDeep(outcome.data);
    // `type` and `data` come from one outcome, a pairing TypeScript cannot follow through the call.
    return this.writer.emit(outcome.type, data as never);
  }

  get seq(): number {
    return this.writer.seq;
  }

  /** Publishes what the delta streams hold (both end: a later delta starts a fresh text). */
  #flushDeltas(): void {
    for (const type of ['tool_thinking', 'message_chunk'] as const)
      this.#queueDelta(type, this.#deltas[type].end());
  }

  #queueDelta(type: DeltaType, delta: string): void {
    if (delta !== '') this.#queue(type, { delta });
  }

  #queue(type: ProgressEvent['type'], data: ProgressEvent['data']): void {
    this.#chain = this.#chain.then(() => this.#publish(type, data));
  }

  async #publish(type: ProgressEvent['type'], data: ProgressEvent['data']): Promise<void> {
    if (this.#failed) return;
    try {
      // `type` and `data` come from one ProgressEvent, a pairing TypeScript cannot follow through the call.
      await this.writer.emit(type, data as never);
    } catch (error) {
      this.#failed = true;
      this.#failure = error;
      this.onFailure(error);
    }
  }
}
