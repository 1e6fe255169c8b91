/**
 * Limits on one model key held by every executor together, in the KV bucket mesh_model_limits, keyed by a
 * hash of the key (never the key):
 * - `max_concurrent`: slots `<hash>.slot.<n>`, each taken by compare-and-set (create, or update of an
 *   expired lease at the revision read) and renewed while the call runs; an executor that dies stops
 *   renewing and its slot is taken over once its lease has expired.
 * - `rpm`: a counter per minute `<hash>.rpm.<minute>`, incremented by compare-and-set before the call.
 * - `tpm`: a counter per minute `<hash>.tpm.<minute>` of the tokens calls used (added after each call); a
 *   call waits while the minute's count has reached the limit. A fixed window: a minute may start with the
 *   previous one's calls still answering.
 * A call without room waits: for a change under its slots (a KV watch) or the next lease expiry, or for
 * the next minute (a timer), and always for the task's signal. Nothing busy-waits.
 */
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { KvWatchInclude, type KV } from '@nats-io/kv';
import type { ModelLimits } from '@agentmesh/protocol';

export type LimitName = 'max_concurrent' | 'rpm' | 'tpm';

export interface LimitWait {
  limit: LimitName;
  value: number;
}

/** What a call holds while it runs; released with the tokens it used. */
export interface KeyLease {
  release(usedTokens: number): Promise<void>;
}

export interface SharedKeyLimitsOptions {
  /** How long a slot stays held without renewal. */
  leaseMs: number;
  /** Names this process as a slot's holder (for operators reading the bucket). */
  holder: string;
  now?: () => number;
}

const MINUTE_MS = 60_000;
/** Compare-and-set conflicts retried before a counter update gives up (then the call goes ahead). */
const MAX_CAS_TRIES = 20;

/** The KV key part naming a model key: a hash of the key, or of the endpoint for a keyless one. */
export function keyIdOf(apiKey: string | undefined, baseUrl: string): string {
  return createHash('sha256')
    .update(apiKey ? `key:${apiKey}` : `url:${baseUrl}`)
    .digest('hex')
    .slice(0, 32);
}

export class SharedKeyLimits {
  private readonly now: () => number;

  constructor(
    private readonly kv: KV,
    private readonly options: SharedKeyLimitsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Waits until the key has room under `limits`, then holds it. `onWait` is told once per limit that
   * made the call wait. Rejects with the signal's reason when it aborts.
   */
  async acquire(
    keyId: string,
    limits: ModelLimits,
    signal: AbortSignal,
    onWait: (wait: LimitWait) => void,
  ): Promise<KeyLease> {
    const told = new Set<LimitName>();
    const tell = (wait: LimitWait): void => {
      if (told.has(wait.limit)) return;
      told.add(wait.limit);
      onWait(wait);
    };
    if (limits.tpm !== undefined) await this.waitForTokens(keyId, limits.tpm, signal, tell);
    if (limits.rpm !== undefined) await this.countRequest(keyId, limits.rpm, signal, tell);
    const slot =
      limits.max_concurrent === undefined
        ? undefined
        : await this.takeSlot(keyId, limits.max_concurrent, signal, tell);
    return {
      release: async (usedTokens) => {
        await slot?.release();
        if (limits.tpm !== undefined && usedTokens > 0) {
          await this.add(`${keyId}.tpm.${this.minute()}`, usedTokens).catch(() => undefined);
        }
      },
    };
  }

  private minute(): number {
    return Math.floor(this.now() / MINUTE_MS);
  }

  private untilNextMinute(): number {
    return MINUTE_MS - (this.now() % MINUTE_MS) + 1;
  }

  private async waitForTokens(
    keyId: string,
    tpm: number,
    signal: AbortSignal,
    tell: (wait: LimitWait) => void,
  ): Promise<void> {
    for (;;) {
      signal.throwIfAborted();
      const used = await this.count(`${keyId}.tpm.${this.minute()}`);
      if (used.value < tpm) return;
      tell({ limit: 'tpm', value: tpm });
      await sleep(this.untilNextMinute(), undefined, { signal });
    }
  }

  private async countRequest(
    keyId: string,
    rpm: number,
    signal: AbortSignal,
    tell: (wait: LimitWait) => void,
  ): Promise<void> {
    for (;;) {
      signal.throwIfAborted();
      const key = `${keyId}.rpm.${this.minute()}`;
      const current = await this.count(key);
      if (current.value >= rpm) {
        tell({ limit: 'rpm', value: rpm });
        await sleep(this.untilNextMinute(), undefined, { signal });
        continue;
      }
      if (await this.compareAndSet(key, current, current.value + 1)) return;
    }
  }

  private async takeSlot(
    keyId: string,
    max: number,
    signal: AbortSignal,
    tell: (wait: LimitWait) => void,
  ): Promise<{ release(): Promise<void> }> {
    for (;;) {
      signal.throwIfAborted();
      // Watching before looking: a slot freed between the look and the wait still wakes us.
      const watcher = await this.kv.watch({ key: `${keyId}.slot.*`, include: KvWatchInclude.UpdatesOnly });
      try {
        let earliestExpiry = Number.POSITIVE_INFINITY;
        for (let n = 0; n < max; n++) {
          const key = `${keyId}.slot.${n}`;
          const taken = await this.tryTake(key);
          if (typeof taken !== 'number') return taken;
          earliestExpiry = Math.min(earliestExpiry, taken);
        }
        tell({ limit: 'max_concurrent', value: max });
        await this.nextChange(watcher, Math.max(0, earliestExpiry - this.now()) + 1, signal);
      } finally {
        watcher.stop();
      }
    }
  }

  /** The slot held, or when it is held by another: the expiry of that holder's lease. */
  private async tryTake(key: string): Promise<{ release(): Promise<void> } | number> {
    const entry = await this.kv.get(key);
    const lease = (): string =>
      JSON.stringify({
        holder: this.options.holder,
        id: randomUUID(),
        expires_at: this.now() + this.options.leaseMs,
      });
    let revision: number;
    try {
      if (entry === null || entry.operation !== 'PUT') {
        revision = await this.kv.create(key, lease());
      } else {
        const expiresAt = expiryOf(entry.string());
        if (expiresAt > this.now()) return expiresAt;
        revision = await this.kv.update(key, lease(), entry.revision);
      }
    } catch {
      // Another executor took it between the read and the write.
      return this.now();
    }
    return this.held(key, revision, lease);
  }

  private held(key: string, taken: number, lease: () => string): { release(): Promise<void> } {
    let revision = taken;
    let renewing = true;
    const renew = setInterval(
      () => {
        this.kv
          .update(key, lease(), revision)
          .then((next) => {
            revision = next;
          })
          .catch(() => {
            // Lost (it expired and was taken over): nothing left to renew.
            renewing = false;
            clearInterval(renew);
          });
      },
      Math.max(1, Math.floor(this.options.leaseMs / 3)),
    );
    renew.unref();
    return {
      release: async () => {
        clearInterval(renew);
        if (!renewing) return;
        await this.kv.delete(key, { previousSeq: revision }).catch(() => undefined);
      },
    };
  }

  /** Resolves on the next update under the watch, after `timeoutMs`, or rejects when `signal` aborts. */
  private async nextChange(
    watcher: AsyncIterable<unknown>,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<void> {
    const timer = new AbortController();
    const both = AbortSignal.any([signal, timer.signal]);
    const iterator = watcher[Symbol.asyncIterator]();
    try {
      await Promise.race([iterator.next(), sleep(timeoutMs, undefined, { signal: both })]);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw error;
    } finally {
      timer.abort();
    }
    signal.throwIfAborted();
  }

  private async count(key: string): Promise<{ value: number; revision: number | undefined }> {
    const entry = await this.kv.get(key);
    if (entry === null || entry.operation !== 'PUT') return { value: 0, revision: undefined };
    const value = Number(entry.string());
    return { value: Number.isFinite(value) ? value : 0, revision: entry.revision };
  }

  private async compareAndSet(
    key: string,
    current: { revision: number | undefined },
    value: number,
  ): Promise<boolean> {
    try {
      if (current.revision === undefined) await this.kv.create(key, String(value));
      else await this.kv.update(key, String(value), current.revision);
      return true;
    } catch {
      return false;
    }
  }

  private async add(key: string, amount: number): Promise<void> {
    for (let tries = 0; tries < MAX_CAS_TRIES; tries++) {
      const current = await this.count(key);
      if (await this.compareAndSet(key, current, current.value + amount)) return;
    }
  }
}

function expiryOf(text: string): number {
  try {
    const value = (JSON.parse(text) as { expires_at?: unknown }).expires_at;
    return typeof value === 'number' ? value : 0;
  } catch {
    return 0;
  }
}
