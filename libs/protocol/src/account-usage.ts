// An account's use of models in one UTC day (KV `mesh_account_usage`, key `<account>.<YYYY-MM-DD>`): added
// to by executors as tasks end, read by the gateway to refuse tasks past the account's daily caps.
import { z } from 'zod';
import { AccountId } from './names.js';

const Count = z.int().nonnegative();

export const AccountDailyUsage = z.object({
  account_id: AccountId,
  /** UTC day, `YYYY-MM-DD`. */
  day: z.string().regex(/^\d{4}-\d{2}-\d{2}$/),
  total_tokens: Count,
  /** US dollars of the priced part of that use. */
  cost_usd: z.number().nonnegative(),
  /** Tasks whose usage was added. */
  tasks: Count,
});
export type AccountDailyUsage = z.infer<typeof AccountDailyUsage>;

/** `2026-11-24` for any time that UTC day. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** KV key of an account's usage on a UTC day. */
export function accountUsageKey(accountId: string, day: string): string {
  return `${accountId}.${day}`;
}
