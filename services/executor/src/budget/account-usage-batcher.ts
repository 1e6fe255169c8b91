/**
 * Adds finished tasks' usage to their accounts' days in batches: one compare-and-set write per account and
 * day every `flushMs`, instead of one per task. Every task of an account writes the same KV entry, so at
 * 64 tasks ending at once per-task writes lost their compare-and-set over and over (the bench saw twice
 * the NATS messages per task, and additions gave up after their retries). The price: usage added in the
 * last `flushMs` before an executor dies is lost (never counted twice); daily caps are coarse enough.
 */
import type { AccountUsageStore, TaskUsage } from '@agentmesh/bus';

interface PendingUsage {
  accountId: string;
  day: string;
  totalTokens: number;
  costUsd: number;
  tasks: number;
}

export interface AccountUsageBatcherOptions {
  store: Pick<AccountUsageStore, 'add'>;
  /** How long usage gathers before it is written. */
  flushMs: number;
  /** Told about a batch that could not be written (it is kept for the next flush). */
  onError: (error: unknown, batch: { accountId: string; day: string }) => void;
}

export class AccountUsageBatcher {
  #pending = new Map<string, PendingUsage>();
  #timer: NodeJS.Timeout | undefined;
  #flushing: Promise<void> = Promise.resolve();

  constructor(private readonly options: AccountUsageBatcherOptions) {}

  /** Gathers one task's usage; written within `flushMs`. */
  add(accountId: string, day: string, usage: TaskUsage): Promise<void> {
    this.#gather({ accountId, day, ...usage, tasks: usage.tasks ?? 1 });
    this.#schedule();
    return Promise.resolve();
  }

  /** Writes everything gathered so far (after any flush under way). */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#flushing = this.#flushing.then(() => this.#write());
    return this.#flushing;
  }

  /** Writes what is gathered; no timer is left behind. */
  async stop(): Promise<void> {
    await this.flush();
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    // Unref'd: a pending batch never keeps a stopping process alive (stop() writes it).
    this.#timer ??= setTimeout(() => void this.flush(), this.options.flushMs).unref();
  }

  #gather(usage: PendingUsage): void {
    const key = `${usage.accountId}.${usage.day}`;
    const pending = this.#pending.get(key);
    if (pending === undefined) {
      this.#pending.set(key, { ...usage });
      return;
    }
    pending.totalTokens += usage.totalTokens;
    pending.costUsd += usage.costUsd;
    pending.tasks += usage.tasks;
  }

  async #write(): Promise<void> {
    const batches = [...this.#pending.values()];
    this.#pending = new Map();
    await Promise.all(
      batches.map(async (batch) => {
        try {
          await this.options.store.add(batch.accountId, batch.day, batch);
        } catch (error) {
          this.options.onError(error, batch);
          // Kept for the next flush: a write refused now (NATS away) is tried again, not dropped.
          this.#gather(batch);
          this.#schedule();
        }
      }),
    );
  }
}
