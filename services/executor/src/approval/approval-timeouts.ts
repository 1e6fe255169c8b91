/**
 * Every executor watches KV `mesh_parked_tasks` and ends the wait of approvals nobody decided in time: at
 * each parked task's next expiry it expires what is due (compare-and-set: one executor wins, the others
 * find nothing left to expire) and queues the task again, whose resumed attempt ends it with
 * APPROVAL_TIMEOUT. The watch starts with the bucket's content, so an executor started after an expiry
 * handles it at once. It also queues again, after a grace period, a task that is ready to resume but was
 * not queued (a decider that died between its decision and the queuing); queuing is idempotent.
 */
import {
  expireApprovals,
  isReadyToResume,
  nextApprovalExpiry,
  ParkedTaskStore,
  type VersionedParkedTask,
} from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';

type KvWatch = Awaited<ReturnType<ParkedTaskStore['kv']['watch']>>;

/** Longest delay setTimeout takes; a later expiry is looked at again then. */
const MAX_TIMER_MS = 2_147_483_647;
const RETRY_MS = 1_000;

export interface ApprovalTimeoutsOptions {
  store: ParkedTaskStore;
  js: JetStreamClient;
  log: Logger;
  /** How long a ready but not queued task is left to its decider before this executor queues it. */
  requeueGraceMs: number;
  now?: () => number;
}

export class ApprovalTimeouts {
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #now: () => number;
  #watch: KvWatch | undefined;
  #retry: NodeJS.Timeout | undefined;
  #stopped = false;

  private constructor(private readonly options: ApprovalTimeoutsOptions) {
    this.#now = options.now ?? Date.now;
  }

  /** Resolves once the watch is started (it then delivers the bucket's content). */
  static async start(options: ApprovalTimeoutsOptions): Promise<ApprovalTimeouts> {
    const timeouts = new ApprovalTimeouts(options);
    await timeouts.#follow();
    return timeouts;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#retry);
    this.#watch?.stop();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  async #follow(): Promise<void> {
    if (this.#stopped) return;
    let watch: KvWatch;
    try {
      watch = await this.options.store.kv.watch();
    } catch (error) {
      this.#restart(error);
      return;
    }
    this.#watch = watch;
    void (async () => {
      for await (const entry of watch) {
        if (this.#stopped) return;
        let decoded: VersionedParkedTask | undefined;
        try {
          decoded = ParkedTaskStore.decode(entry);
        } catch (error) {
          this.options.log.warn({ err: error, key: entry.key }, 'a parked task entry does not decode');
          continue;
        }
        this.#consider(entry.key, decoded);
      }
    })().then(
      () => this.#restart(new Error('the watch of parked tasks ended')),
      (error: unknown) => this.#restart(error),
    );
  }

  #restart(error: unknown): void {
    if (this.#stopped) return;
    this.options.log.warn({ err: error }, 'watching parked tasks failed; starting again');
    this.#watch = undefined;
    this.#retry = setTimeout(() => void this.#follow(), RETRY_MS);
    this.#retry.unref();
  }

  /** Sets the key's timer from its current entry: none for a deleted or queued task. */
  #consider(key: string, entry: VersionedParkedTask | undefined): void {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    if (entry === undefined || entry.parked.resumed_at !== undefined) return;
    const { parked } = entry;
    if (isReadyToResume(parked)) {
      this.#schedule(key, this.options.requeueGraceMs, () => this.#queue(parked.account_id, parked.trace_id));
      return;
    }
    const expiry = nextApprovalExpiry(parked);
    if (expiry === undefined) return;
    this.#schedule(key, expiry.getTime() - this.#now(), () => this.#expire(key, entry));
  }

  #schedule(key: string, delayMs: number, action: () => Promise<void>): void {
    const timer = setTimeout(
      () => {
        this.#timers.delete(key);
        action().catch((error: unknown) => {
          this.options.log.warn({ err: error, key }, 'ending an approval wait failed; trying again');
          this.#schedule(key, RETRY_MS, action);
        });
      },
      Math.min(MAX_TIMER_MS, Math.max(0, delayMs)),
    );
    timer.unref();
    this.#timers.set(key, timer);
  }

  async #expire(key: string, entry: VersionedParkedTask): Promise<void> {
    const { account_id: accountId, trace_id: traceId } = entry.parked;
    const updated = await this.options.store.update(accountId, traceId, (parked) =>
      expireApprovals(parked, new Date(this.#now())),
    );
    if (updated === undefined) return;
    if (isReadyToResume(updated.parked)) {
      this.options.log.info({ trace_id: traceId }, 'an approval expired; queuing the task to end it');
      await this.#queue(accountId, traceId);
    } else if (updated.revision === entry.revision) {
      // Nothing was due yet (the timer fired early): look again shortly.
      this.#schedule(key, 50, () => this.#expire(key, updated));
    }
  }

  async #queue(accountId: string, traceId: string): Promise<void> {
    await this.options.store.resumeIfReady(this.options.js, accountId, traceId, {
      now: new Date(this.#now()),
    });
  }
}
