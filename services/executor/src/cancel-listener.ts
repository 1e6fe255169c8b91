/**
 * How a running task learns it was cancelled. The gateway stores `cancel_requested_at` in the task's status
 * record (KV `mesh_tasks`) and then broadcasts a CancelSignal on `mesh.control.cancel.<account>.<trace_id>`
 * (core NATS). The record is what counts; the broadcast only makes it quick, and it is lost whenever this
 * instance is not connected when it goes out (or the gateway dies between the two). So one listener per
 * executor instance follows three things, each of which aborts the task's attempt (reason CANCELLED):
 *
 * - the broadcast, for every task (signals for tasks this instance is not running are ignored: a task that
 *   has not started yet finds the flag in its record when it starts);
 * - the status writes themselves: every KV write is a message on `$KV.mesh_tasks.<key>`. While a task runs
 *   here, the listener holds a core subscription to its key, taken when the task starts (before its
 *   attempt reads the record, so a write is either read by the attempt or heard here) and dropped when
 *   it stops. A record that carries the flag cancels the task, whether or not its broadcast arrived. Only
 *   this instance's own tasks are heard, so the cost is one subscription and one message (the attempt's
 *   own `running` write) per task, whatever the mesh's task rate and number of executors; a running task
 *   costs no request per step. (A core subscription rather than a KV watch: no consumer on the server;
 *   what it can miss is covered by the next point.)
 * - the connection: both subscriptions hear nothing while it is down, so after a reconnect, once the
 *   server has the subscriptions again, the record of every running task is read once.
 *
 * The agent loop sees the aborted signal before its next model call or tool round, and a model call or
 * tool call in flight is aborted with it.
 */
import { decodeCancelSignal, decodeJson, type TaskStatusStore } from '@agentmesh/bus';
import { Buckets, isFinalTaskStatus, TaskStatusRecord, taskKey, Wildcards } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import type { RunningTask, RunningTasks } from './running-tasks.js';

/** Where KV publishes the writes of `mesh_tasks`: `<prefix><account>.<trace_id>`. */
const STATUS_WRITE_PREFIX = `$KV.${Buckets.TASKS}.`;
/** Set on a KV delete or purge (whose body is empty). */
const KV_OPERATION_HEADER = 'KV-Operation';

export interface CancelListenerOptions {
  nc: NatsConnection;
  statuses: TaskStatusStore;
  running: RunningTasks;
  log: Logger;
}

export class CancelListener {
  readonly #subscriptions: Subscription[] = [];
  /** The status-write subscription of each running task, by its `mesh_tasks` key. */
  readonly #statusWrites = new Map<string, Subscription>();
  #stopObserving: (() => void) | undefined;
  #statusFeed: AsyncIterable<{ type: string }> | undefined;
  #stopped = false;

  private constructor(private readonly options: CancelListenerOptions) {}

  /** Subscribes; resolves once the server has the subscriptions. */
  static async start(options: CancelListenerOptions): Promise<CancelListener> {
    const listener = new CancelListener(options);
    listener.#listenToBroadcasts();
    listener.#listenToStatusWrites();
    listener.#followConnection();
    await options.nc.flush();
    return listener;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stopObserving?.();
    (this.#statusFeed as { stop?: () => void } | undefined)?.stop?.();
    for (const subscription of this.#statusWrites.values()) subscription.unsubscribe();
    this.#statusWrites.clear();
    await Promise.all(this.#subscriptions.map((subscription) => subscription.drain()));
  }

  #listenToBroadcasts(): void {
    const { running, log } = this.options;
    this.#subscribe(Wildcards.ALL_CANCELS, (msg) => {
      const signal = decodeCancelSignal(msg.subject, msg.data);
      if (signal === undefined) {
        log.warn({ subject: msg.subject }, 'ignored a malformed cancel signal');
        return;
      }
      if (running.cancel(signal.account_id, signal.trace_id, signal.reason)) {
        log.info({ trace_id: signal.trace_id }, 'cancelling running task');
      }
    });
  }

  #listenToStatusWrites(): void {
    const { nc, running, log } = this.options;
    this.#stopObserving = running.observe({
      started: (task) => {
        if (this.#stopped) return;
        const key = taskKey(task.accountId, task.traceId);
        const subscription = nc.subscribe(`${STATUS_WRITE_PREFIX}${key}`, {
          callback: (error, msg) => {
            if (error) {
              log.warn({ err: error, trace_id: task.traceId }, 'a status-write subscription failed');
              return;
            }
            this.#onStatusWrite(task, key, msg);
          },
        });
        this.#statusWrites.set(key, subscription);
      },
      stopped: (task) => {
        const key = taskKey(task.accountId, task.traceId);
        this.#statusWrites.get(key)?.unsubscribe();
        this.#statusWrites.delete(key);
      },
    });
  }

  #onStatusWrite(task: RunningTask, key: string, msg: Msg): void {
    if (msg.headers?.get(KV_OPERATION_HEADER)) return;
    let record: TaskStatusRecord;
    try {
      record = decodeJson(TaskStatusRecord, msg.data, `${Buckets.TASKS}/${key}`);
    } catch (error) {
      this.options.log.warn({ err: error, trace_id: task.traceId }, 'ignored an unreadable task status');
      return;
    }
    this.#honour(task, record);
  }

  #subscribe(subject: string, onMessage: (msg: Msg) => void): void {
    const { nc, log } = this.options;
    const subscription = nc.subscribe(subject, {
      callback: (error, msg) => {
        if (error) {
          log.warn({ err: error, subject }, 'a cancel subscription failed');
          return;
        }
        onMessage(msg);
      },
    });
    this.#subscriptions.push(subscription);
  }

  #followConnection(): void {
    this.#statusFeed = this.options.nc.status();
    void (async () => {
      for await (const status of this.#statusFeed!) {
        if (this.#stopped) return;
        if (status.type === 'reconnect') void this.#recheckRunning();
      }
    })().catch(() => {
      // The connection closed: nothing more to follow.
    });
  }

  /** Reads the record of every running task: what was stored while nothing was heard. */
  async #recheckRunning(): Promise<void> {
    const { nc, statuses, running, log } = this.options;
    try {
      // Read after the server has the subscriptions again, so a write is either read here or heard.
      await nc.flush();
    } catch {
      return; // Disconnected again: the next reconnect reads.
    }
    await Promise.all(
      running.list().map(async (task) => {
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
