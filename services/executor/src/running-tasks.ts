/**
 * The task attempts this executor instance is running, by account and trace id (trace ids are scoped by
 * account): where a cancel finds the task to stop, and what a stopping executor hands back.
 */
import { taskKey } from '@agentmesh/protocol';
import type { TaskAbort } from './task-abort.js';

/** A task this instance is running: its account and trace id. */
export interface RunningTask {
  readonly accountId: string;
  readonly traceId: string;
}

interface Entry extends RunningTask {
  readonly aborts: Set<TaskAbort>;
}

/** Told when a task starts and stops running on this instance (its first attempt added, its last removed). */
export interface RunningTaskObserver {
  started(task: RunningTask): void;
  stopped(task: RunningTask): void;
}

export class RunningTasks {
  readonly #byKey = new Map<string, Entry>();
  readonly #observers = new Set<RunningTaskObserver>();

  /** Tells `observer` of every task that starts or stops from now on, until the returned function is called. */
  observe(observer: RunningTaskObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  /** Tracks `abort` until the returned function is called. */
  add(accountId: string, traceId: string, abort: TaskAbort): () => void {
    const key = taskKey(accountId, traceId);
    let entry = this.#byKey.get(key);
    if (entry === undefined) {
      entry = { accountId, traceId, aborts: new Set() };
      this.#byKey.set(key, entry);
      for (const observer of this.#observers) observer.started(entry);
    }
    const tracked = entry;
    tracked.aborts.add(abort);
    return () => {
      tracked.aborts.delete(abort);
      if (tracked.aborts.size === 0 && this.#byKey.get(key) === tracked) {
        this.#byKey.delete(key);
        for (const observer of this.#observers) observer.stopped(tracked);
      }
    };
  }

  /** The task running under `key` (its `mesh_tasks` key, see `taskKey`), if this instance runs it. */
  byKey(key: string): RunningTask | undefined {
    return this.#byKey.get(key);
  }

  /**
   * Whether an attempt of the task runs here and still means to end it: not aborted, or aborted by a cancel
   * or its deadline (it writes the terminal event); one handed back or that lost its task does not count.
   */
  runsLive(accountId: string, traceId: string): boolean {
    const entry = this.#byKey.get(taskKey(accountId, traceId));
    if (entry === undefined) return false;
    for (const abort of entry.aborts) if (abort.reason === undefined || abort.reason.endsTask) return true;
    return false;
  }

  /** Every task running now. */
  list(): RunningTask[] {
    return [...this.#byKey.values()].map(({ accountId, traceId }) => ({ accountId, traceId }));
  }

  /** Cancels the task's running attempt; false when this instance is not running it. */
  cancel(accountId: string, traceId: string, why?: string): boolean {
    const entry = this.#byKey.get(taskKey(accountId, traceId));
    if (entry === undefined) return false;
    for (const abort of entry.aborts) abort.cancel(why);
    return true;
  }

  /** Stops every running attempt so its task goes back to the queue. */
  handBackAll(): void {
    for (const entry of this.#byKey.values()) for (const abort of entry.aborts) abort.handBack();
  }

  get size(): number {
    return this.#byKey.size;
  }
}
