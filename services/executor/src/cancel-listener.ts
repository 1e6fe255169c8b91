/**
 * How a running task learns it was cancelled. The gateway stores `cancel_requested_at` in the task's status
 * record (KV `mesh_tasks`) and then broadcasts a CancelSignal on `mesh.control.cancel.<account>.<trace_id>`
 * (core NATS). The record is what counts; the broadcast is only the fast path, and it is lost whenever this
 * instance is not connected when it goes out (or the gateway dies between the two). So one listener per
 * executor instance follows three things, each of which aborts the task's attempt (reason CANCELLED):
 *
 * - the broadcast, for every task (signals for tasks this instance is not running are ignored: a task that
 *   has not started yet finds the flag in its record when it starts);
 * - a watch of `mesh_tasks` that delivers only updates made from now on: a record of a task this instance
 *   runs that carries the flag cancels it, whether or not its broadcast arrived. Records of other tasks are
 *   dropped on their key, without being decoded, so a running task costs no request per step;
 * - the connection: after a reconnect, and whenever the watch had to be started again, the watch is
 *   started afresh and then the record of every running task is read once, so a request stored while
 *   nothing was listening is found too.
 *
 * The agent loop sees the aborted signal before its next model call or tool round, and a model call or
 * tool call in flight is aborted with it.
 */
import { decodeCancelSignal, decodeJson, type TaskStatusStore } from '@agentmesh/bus';
import { isFinalTaskStatus, TaskStatusRecord, Wildcards } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import { KvWatchInclude, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { RunningTask, RunningTasks } from './running-tasks.js';

export interface CancelListenerOptions {
  nc: NatsConnection;
  /** The `mesh_tasks` bucket, opened on `nc`. */
  tasks: KV;
  statuses: TaskStatusStore;
  running: RunningTasks;
  log: Logger;
  /** Delay before a failed status watch is started again: from `min`, doubling up to `max`. */
  retryDelayMs?: { min: number; max: number };
}

type StatusWatch = Awaited<ReturnType<KV['watch']>>;

const DEFAULT_RETRY = { min: 500, max: 30_000 } as const;

export class CancelListener {
  #subscription: Subscription | undefined;
  #watch: StatusWatch | undefined;
  /** Bumped whenever the watch is replaced, so a superseded watch's entries and end are ignored. */
  #generation = 0;
  #failures = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #statusFeed: AsyncIterable<{ type: string }> | undefined;
  #stopped = false;

  private constructor(private readonly options: CancelListenerOptions) {}

  /** Listens to broadcasts and starts the status watch; resolves once the watch is up (or has failed once). */
  static async start(options: CancelListenerOptions): Promise<CancelListener> {
    const listener = new CancelListener(options);
    listener.#listenToBroadcasts();
    listener.#followConnection();
    await listener.#watchStatuses(false);
    return listener;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#generation++;
    clearTimeout(this.#retryTimer);
    this.#watch?.stop();
    this.#watch = undefined;
    (this.#statusFeed as { stop?: () => void } | undefined)?.stop?.();
    await this.#subscription?.drain();
  }

  #listenToBroadcasts(): void {
    const { nc, running, log } = this.options;
    this.#subscription = nc.subscribe(Wildcards.ALL_CANCELS, {
      callback: (error, msg) => {
        if (error) {
          log.warn({ err: error }, 'cancel subscription failed; cancels are learnt from the task status');
          return;
        }
        const signal = decodeCancelSignal(msg.subject, msg.data);
        if (signal === undefined) {
          log.warn({ subject: msg.subject }, 'ignored a malformed cancel signal');
          return;
        }
        if (running.cancel(signal.account_id, signal.trace_id, signal.reason)) {
          log.info({ trace_id: signal.trace_id }, 'cancelling running task');
        }
      },
    });
  }

  #followConnection(): void {
    this.#statusFeed = this.options.nc.status();
    void (async () => {
      for await (const status of this.#statusFeed!) {
        if (this.#stopped) return;
        // Status updates sent while the connection was down may never reach the old watch, and the
        // broadcasts of that time are gone: watch afresh, then read what the running tasks' records say.
        if (status.type === 'reconnect') void this.#watchStatuses(true);
      }
    })().catch(() => {
      // The connection closed: nothing more to follow.
    });
  }

  /** Replaces the status watch; with `recheck`, then reads the record of every running task. */
  async #watchStatuses(recheck: boolean): Promise<void> {
    if (this.#stopped) return;
    const generation = ++this.#generation;
    clearTimeout(this.#retryTimer);
    this.#watch?.stop();
    this.#watch = undefined;
    let watch: StatusWatch;
    try {
      watch = await this.options.tasks.watch({ include: KvWatchInclude.UpdatesOnly, ignoreDeletes: true });
    } catch (error) {
      this.#watchFailed(generation, error);
      return;
    }
    if (generation !== this.#generation) {
      watch.stop();
      return;
    }
    this.#watch = watch;
    this.#failures = 0;
    void (async () => {
      for await (const entry of watch) {
        if (generation !== this.#generation) return;
        this.#heardStatus(entry);
      }
    })().then(
      () => this.#watchFailed(generation, new Error('the task status watch ended')),
      (error: unknown) => this.#watchFailed(generation, error),
    );
    if (recheck) await this.#recheckRunning();
  }

  #watchFailed(generation: number, error: unknown): void {
    if (generation !== this.#generation || this.#stopped) return;
    this.#watch = undefined;
    const { min, max } = this.options.retryDelayMs ?? DEFAULT_RETRY;
    const delay = Math.min(max, min * 2 ** this.#failures++);
    this.options.log.warn(
      { err: error, retry_in_ms: delay },
      'task status watch failed; cancels are heard from broadcasts only until it is back',
    );
    // Whatever was stored while nothing watched is read once the new watch is up.
    this.#retryTimer = setTimeout(() => void this.#watchStatuses(true), delay);
    this.#retryTimer.unref();
  }

  #heardStatus(entry: KvWatchEntry): void {
    if (entry.operation !== 'PUT') return;
    const task = this.options.running.byKey(entry.key);
    if (task === undefined) return;
    let record: TaskStatusRecord;
    try {
      record = decodeJson(TaskStatusRecord, entry.value, `mesh_tasks/${entry.key}`);
    } catch (error) {
      this.options.log.warn({ err: error, trace_id: task.traceId }, 'ignored an unreadable task status');
      return;
    }
    this.#honour(task, record);
  }

  async #recheckRunning(): Promise<void> {
    const { statuses, log } = this.options;
    await Promise.all(
      this.options.running.list().map(async (task) => {
        try {
          const record = await statuses.get(task.accountId, task.traceId);
          if (record !== undefined) this.#honour(task, record);
        } catch (error) {
          log.warn({ err: error, trace_id: task.traceId }, 'could not read the status of a running task');
        }
      }),
    );
  }

  /** Cancels the task's attempt when its record asks for it (a final record belongs to an attempt that is over). */
  #honour(task: RunningTask, record: TaskStatusRecord): void {
    if (this.#stopped || record.cancel_requested_at === undefined || isFinalTaskStatus(record.status)) return;
    if (this.options.running.cancel(task.accountId, task.traceId)) {
      this.options.log.info({ trace_id: task.traceId }, 'cancelling running task: its status asks for it');
    }
  }
}
