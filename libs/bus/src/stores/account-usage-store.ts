/**
 * Accounts' daily use of models in KV `mesh_account_usage` (key `<account>.<YYYY-MM-DD>`, UTC): executors
 * add each finished task's tokens and cost to the day it finished on, the gateway reads the day's total
 * to refuse submissions past the account's caps. Additions are compare-and-set on the entry's revision,
 * so executors finishing tasks of one account at once never lose one another's addition. The bucket's
 * TTL (about two days) drops past days on its own.
 */
import { AccountDailyUsage, AccountId, accountUsageKey } from '@agentmesh/protocol';
import { JetStreamApiError } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { AccountUsageWriteError } from '../errors.js';
import { isLostCompareAndSet } from '../jetstream-api-error.js';
import { decodeJson, encodeJson } from '../json.js';

const MAX_CAS_ATTEMPTS = 10;

/** What one task (or a batch of `tasks` tasks) adds to its account's day. */
export interface TaskUsage {
  readonly totalTokens: number;
  readonly costUsd: number;
  /** How many tasks this is; 1 when absent. */
  readonly tasks?: number;
}

export class AccountUsageStore {
  constructor(private readonly kv: KV) {}

  /** The account's use on a UTC day (`YYYY-MM-DD`); zero when nothing was added yet. */
  async get(accountId: string, day: string): Promise<AccountDailyUsage> {
    return (
      (await this.read(accountUsageKey(AccountId.parse(accountId), day)))?.usage ?? empty(accountId, day)
    );
  }

  /** Adds one task's usage (or a batch's) to the account's day; returns the day's new total. */
  async add(accountId: string, day: string, task: TaskUsage): Promise<AccountDailyUsage> {
    const key = accountUsageKey(AccountId.parse(accountId), day);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.read(key);
      const base = current?.usage ?? empty(accountId, day);
      const next = AccountDailyUsage.parse({
        ...base,
        total_tokens: base.total_tokens + task.totalTokens,
        cost_usd: Math.round((base.cost_usd + task.costUsd) * 1e10) / 1e10,
        tasks: base.tasks + (task.tasks ?? 1),
      });
      try {
        if (current === undefined) await this.kv.create(key, encodeJson(next));
        else await this.kv.update(key, encodeJson(next), current.revision);
        return next;
      } catch (error) {
        // Another executor added first: read again and add to its total.
        if (!isLostCompareAndSet(error)) {
          throw new AccountUsageWriteError(key, !(error instanceof JetStreamApiError), { cause: error });
        }
      }
    }
    throw new AccountUsageWriteError(key, true, {
      cause: new Error(`the entry kept changing under ${MAX_CAS_ATTEMPTS} additions`),
    });
  }

  private async read(key: string): Promise<{ usage: AccountDailyUsage; revision: number } | undefined> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return {
      usage: decodeJson(AccountDailyUsage, entry.value, `mesh_account_usage/${key}`),
      revision: entry.revision,
    };
  }
}

function empty(accountId: string, day: string): AccountDailyUsage {
  return { account_id: accountId, day, total_tokens: 0, cost_usd: 0, tasks: 0 };
}
