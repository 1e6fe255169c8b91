/**
 * Accounts' daily token and cost caps, checked at submit (HTTP, NATS ingress, OpenAI façade and MCP alike:
 * TaskSubmitter). An account at or over its token cap today (UTC) is refused 429 RATE_LIMITED with a
 * Retry-After to the next UTC day; at or over its cost cap, 402 BUDGET_EXCEEDED. The day's use is what the
 * executors added to `mesh_account_usage` as tasks ended, so a task running now counts once it ends: an
 * account may go past a cap by what its running tasks spend.
 *
 * One KV get per submission of a capped account, none for an uncapped one. With a cache time, the day's use
 * is reused that long per account (fewer reads; the cap may be passed by what is submitted meanwhile).
 */
import { utcDay, type AccountDailyUsage } from '@agentmesh/protocol';
import type { AccountUsageStore } from '@agentmesh/bus';
import { DailyCostCapReached, DailyTokenCapReached, type Rejection } from './errors.js';

/** An account's daily caps; 0 or absent: no cap. */
export interface DailyCaps {
  readonly tokens?: number;
  readonly cost_usd?: number;
}

export interface AccountDailyCapsOptions {
  /** Caps of accounts with no entry in `perAccount`. */
  defaults: DailyCaps;
  /** Caps by account id; they replace the defaults for that account (field by field). */
  perAccount: ReadonlyMap<string, DailyCaps>;
  usage: Pick<AccountUsageStore, 'get'>;
  /** How long a day's use read for an account is reused; 0: read on every submission. */
  cacheMs: number;
  now?: () => number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export class AccountDailyCaps {
  readonly #cache = new Map<string, { usage: AccountDailyUsage; until: number }>();
  readonly #now: () => number;

  constructor(private readonly options: AccountDailyCapsOptions) {
    this.#now = options.now ?? Date.now;
  }

  /** Whether any account has a cap (else nothing needs checking). */
  get active(): boolean {
    return capped(this.options.defaults) || [...this.options.perAccount.values()].some(capped);
  }

  /** The refusal of a submission for an account past a cap today; undefined to go on. Throws when the bus fails. */
  async check(accountId: string): Promise<Rejection | undefined> {
    const caps = this.capsOf(accountId);
    if (!capped(caps)) return undefined;
    const now = this.#now();
    const usage = await this.usageOf(accountId, utcDay(new Date(now)), now);
    if (caps.tokens && usage.total_tokens >= caps.tokens) {
      return new DailyTokenCapReached(usage.total_tokens, caps.tokens, secondsToNextUtcDay(now));
    }
    if (caps.cost_usd && usage.cost_usd >= caps.cost_usd) {
      return new DailyCostCapReached(usage.cost_usd, caps.cost_usd);
    }
    return undefined;
  }

  capsOf(accountId: string): DailyCaps {
    return { ...this.options.defaults, ...this.options.perAccount.get(accountId) };
  }

  private async usageOf(accountId: string, day: string, now: number): Promise<AccountDailyUsage> {
    const key = `${accountId}.${day}`;
    const cached = this.#cache.get(key);
    if (cached !== undefined && cached.until > now) return cached.usage;
    const usage = await this.options.usage.get(accountId, day);
    if (this.options.cacheMs > 0) {
      // Bounded: past days and expired entries go first.
      if (this.#cache.size >= 10_000) this.#cache.clear();
      this.#cache.set(key, { usage, until: now + this.options.cacheMs });
    }
    return usage;
  }
}

function capped(caps: DailyCaps): boolean {
  return Boolean(caps.tokens) || Boolean(caps.cost_usd);
}

/** Seconds from `now` (epoch ms) to the next UTC midnight, at least 1. */
export function secondsToNextUtcDay(now: number): number {
  const next = Math.floor(now / DAY_MS + 1) * DAY_MS;
  return Math.max(1, Math.ceil((next - now) / 1000));
}
