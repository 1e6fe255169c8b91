/**
 * The task attempts this executor instance is running, by account and trace id (trace ids are scoped by
 * account): where a cancel signal finds the task to stop, and what a stopping executor hands back.
 */
import { taskKey } from '@agentmesh/protocol';
import type { TaskAbort } from './task-abort.js';

export class RunningTasks {
  readonly #byTrace = new Map<string, Set<TaskAbort>>();

  /** Tracks `abort` until the returned function is called. */
  add(accountId: string, traceId: string, abort: TaskAbort): () => void {
    const key = taskKey(accountId, traceId);
    let entries = this.#byTrace.get(key);
    if (entries === undefined) {
      entries = new Set();
      this.#byTrace.set(key, entries);
    }
    entries.add(abort);
    return () => {
      entries.delete(abort);
      if (entries.size === 0 && this.#byTrace.get(key) === entries) this.#byTrace.delete(key);
    };
  }

  /** Cancels the task's running attempt; false when this instance is not running it. */
  cancel(accountId: string, traceId: string, why?: string): boolean {
    const entries = this.#byTrace.get(taskKey(accountId, traceId));
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
