/**
 * How many tasks may run at once: a count per account and one per API key of the tasks this gateway
 * accepted and that have not ended. Over the limit a submission is refused with 429 RATE_LIMITED and a
 * Retry-After, before anything is written to the bus.
 *
 * A submission takes a slot before it is queued ({@link RunningTaskLimiter.reserve}); the slot is kept
 * under the task's trace id once the task is published, and given back at once when it is not (refused,
 * a repeat of an earlier task, or its publish failed). A kept slot frees when the task ends, whichever
 * way it ends, by two paths:
 * - its terminal event (`done` or `error`, which a cancelled or expired task also gets), as the gateway's
 *   live event feed sees every task's events ({@link RunningTaskLimiter.ended});
 * - a recheck of the task status store for slots older than `recheckMs`: a final status or no record at
 *   all (a task never assembled, its record gone with the retention) frees the slot. This covers a
 *   terminal event the feed never saw (feed off or down past the events' retention, an event it could not
 *   read). A slot as old as the task retention frees in any case, so none is held for ever.
 *
 * The counts live in this gateway's memory and count this gateway's own submissions: with N gateways an
 * account may run N times the limit (configure limit / N per instance for a mesh-wide bound). A restarted
 * gateway starts at zero: tasks it accepted before the restart no longer count.
 */
import { isFinalTaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import type { Caller } from './auth.js';
import { callerLimits, scopeName } from './caller-limits.js';
import { RateLimited } from './errors.js';

export interface RunningTaskLimits {
  /** Tasks one account may have running at once; 0: no limit. */
  perAccount: number;
  /** Tasks one API key may have running at once; 0: no limit. */
  perApiKey: number;
}

export interface RunningTaskLimiterOptions {
  limits: RunningTaskLimits;
  /** Reads a task's status record, to free slots whose terminal event was not seen. */
  status: (accountId: string, traceId: string) => Promise<TaskStatusRecord | undefined>;
  /** How old a slot is before the status store is asked whether its task ended, and how often. */
  recheckMs: number;
  /**
   * A slot this old frees whatever the store says (the task retention: by then the task's message and
   * status record are gone), so not even a record that cannot be read holds a slot for ever.
   */
  maxAgeMs: number;
  /** Told when a recheck could not read the store (the slot stays, asked again next time). */
  onRecheckError?: (error: unknown) => void;
  now?: () => number;
}

/**
 * When a slot frees cannot be foreseen (it is when one of the running tasks ends): the Retry-After is a
 * polling pace, not a promise.
 */
export const RUNNING_LIMIT_RETRY_AFTER_SECONDS = 5;

/** A slot taken for one submission: kept under the task's trace id, or given back. */
export interface RunningTaskSlot {
  /** The task was published: the slot stays until the task ends. */
  keep(traceId: string): void;
  /** Nothing was published for this submission (refused, a repeat, a failed publish). */
  release(): void;
}

interface Slot {
  accountId: string;
  /** `key:<digest>` when the per-key limit counts this slot. */
  keyCounter?: string;
  since: number;
}

const taskSlotKey = (accountId: string, traceId: string): string => `${accountId}\u0000${traceId}`;

export class RunningTaskLimiter {
  /** Counters by `account:<id>` and `key:<digest>`. */
  private readonly counts = new Map<string, number>();
  /** Kept slots by account and trace id. */
  private readonly slots = new Map<string, Slot>();
  private readonly now: () => number;
  private readonly timer: NodeJS.Timeout;
  private rechecking = false;

  constructor(private readonly options: RunningTaskLimiterOptions) {
    this.now = options.now ?? (() => Date.now());
    this.timer = setInterval(() => void this.recheck(), options.recheckMs);
    this.timer.unref();
  }

  /** A slot for this submission, or the 429 of the first limit it would exceed (the per-key one first). */
  reserve(caller: Caller, accountId: string): RunningTaskSlot | RateLimited {
    const checks = callerLimits(caller, accountId, this.options.limits);
    for (const check of checks) {
      if ((this.counts.get(check.counter) ?? 0) >= check.limit) {
        return new RateLimited(
          `${check.limit} tasks are running for this ${scopeName(check.scope)} already; retry when one has ended`,
          RUNNING_LIMIT_RETRY_AFTER_SECONDS,
          {
            scope: check.scope,
            limit_running: check.limit,
            retry_after_seconds: RUNNING_LIMIT_RETRY_AFTER_SECONDS,
          },
        );
      }
    }
    const slot: Slot = { accountId, since: this.now() };
    const keyCheck = checks.find((check) => check.scope === 'api_key');
    if (keyCheck) slot.keyCounter = keyCheck.counter;
    this.count(slot, 1);
    let settled = false;
    return {
      keep: (traceId) => {
        if (settled) return;
        settled = true;
        const key = taskSlotKey(accountId, traceId);
        // Kept twice (one trace id submitted again while it runs): one slot for one task.
        if (this.slots.has(key)) this.count(slot, -1);
        else this.slots.set(key, slot);
      },
      release: () => {
        if (settled) return;
        settled = true;
        this.count(slot, -1);
      },
    };
  }

  /** A task's terminal event was seen: its slot, if this gateway holds one, frees. */
  ended(accountId: string, traceId: string): void {
    const key = taskSlotKey(accountId, traceId);
    const slot = this.slots.get(key);
    if (slot === undefined) return;
    this.slots.delete(key);
    this.count(slot, -1);
  }

  /** Tasks counted against an account now. */
  runningFor(accountId: string): number {
    return this.counts.get(`account:${accountId}`) ?? 0;
  }

  /** Slots kept under a trace id now (reservations not yet published are not among them). */
  get kept(): number {
    return this.slots.size;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Asks the status store about slots older than one recheck period; ended or unknown tasks free theirs. */
  async recheck(): Promise<void> {
    if (this.rechecking) return;
    this.rechecking = true;
    try {
      const now = this.now();
      for (const [key, slot] of [...this.slots]) {
        if (now - slot.since < this.options.recheckMs) continue;
        const traceId = key.slice(slot.accountId.length + 1);
        if (now - slot.since >= this.options.maxAgeMs) {
          this.ended(slot.accountId, traceId);
          continue;
        }
        let record: TaskStatusRecord | undefined;
        try {
          record = await this.options.status(slot.accountId, traceId);
        } catch (error) {
          // This slot is asked again next time; the others are still checked now.
          this.options.onRecheckError?.(error);
          continue;
        }
        if (record === undefined || isFinalTaskStatus(record.status)) this.ended(slot.accountId, traceId);
      }
    } finally {
      this.rechecking = false;
    }
  }

  private count(slot: Slot, delta: 1 | -1): void {
    const counters = [`account:${slot.accountId}`, ...(slot.keyCounter ? [slot.keyCounter] : [])];
    for (const counter of counters) {
      const next = (this.counts.get(counter) ?? 0) + delta;
      if (next > 0) this.counts.set(counter, next);
      else this.counts.delete(counter);
    }
  }
}
