/**
 * The task attempts this executor instance is running, by trace id: where a cancel signal finds the
 * task to stop, and what a stopping executor hands back.
 */
import type { TaskAbort } from './task-abort.js';

export class RunningTasks {
  readonly #byTrace = new Map<string, Set<TaskAbort>>();

  /** Tracks `abort` until the returned function is called. */
  add(traceId: string, abort: TaskAbort): () => void {
    let entries = this.#byTrace.get(traceId);
    if (entries === undefined) {
      entries = new Set();
      this.#byTrace.set(traceId, entries);
    }
    entries.add(abort);
    return () => {
      entries.delete(abort);
      if (entries.size === 0 && this.#byTrace.get(traceId) === entries) this.#byTrace.delete(traceId);
    };
  }

  /** Cancels the task's running attempt; false when this instance is not running it. */
  cancel(traceId: string, why?: string): boolean {
    const entries = this.#byTrace.get(traceId);
    if (entries === undefined) return false;
    for (const abort of entries) abort.cancel(why);
    return true;
  }

  /** Stops every running attempt so its task goes back to the queue. */
  handBackAll(): void {
    for (const entries of this.#byTrace.values()) for (const abort of entries) abort.handBack();
  }

  get size(): number {
    return this.#byTrace.size;
  }
}
