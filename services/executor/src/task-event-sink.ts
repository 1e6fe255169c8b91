/**
 * Publishes one attempt's events in the order they happen. Deltas arrive from synchronous stream
 * callbacks while the previous publish is still waiting for its JetStream ack, and the writer numbers
 * each event from the last one it saw acknowledged, so publishes are chained one after another here.
 * The first publish that fails stops the chain (later events would leave a gap) and is reported once.
 */
import type { TaskEventWriter } from '@agentmesh/bus';
import type { TaskEvent } from '@agentmesh/protocol';
import type { LoopOutcome, ProgressEvent } from './agent-loop.js';

export class TaskEventSink {
  #chain: Promise<unknown> = Promise.resolve();
  #failure: unknown;
  #failed = false;

  constructor(
    private readonly writer: TaskEventWriter,
    /** Called once, with the error of the first publish that failed. */
    private readonly onFailure: (error: unknown) => void,
  ) {}

  /** Queues a progress event; never throws (a failure goes to `onFailure`). */
  readonly emit = (event: ProgressEvent): void => {
    if (this.#failed) return;
    this.#chain = this.#chain.then(() => this.#publish(event.type, event.data));
  };

  /** Publishes the terminal event after everything queued before it; throws when it cannot be written. */
  async finish(outcome: LoopOutcome): Promise<TaskEvent> {
    await this.#chain;
    if (this.#failed) throw this.#failure;
    return this.writer.emit(outcome.type, outcome.data);
  }

  get seq(): number {
    return this.writer.seq;
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
