/**
 * Which per-caller limits a submission counts against, shared by the rate limits (tasks per second) and
 * the running-task caps: the API key's own (only for an API key caller, by its digest) and its account's,
 * each only when set (> 0), the narrower per-key one first. Each comes with the counter key it is kept
 * under (`key:<digest>`, `account:<id>`).
 */
import { CallerKind, type Caller } from './auth.js';

export interface CallerLimitSettings {
  /** The account's limit; 0: none. */
  perAccount: number;
  /** The API key's limit; 0: none. */
  perApiKey: number;
}

export interface CallerLimit {
  /** Where the count is kept: `key:<digest>` or `account:<id>`. */
  counter: string;
  limit: number;
  scope: 'api_key' | 'account';
}

export function callerLimits(
  caller: Caller,
  accountId: string,
  settings: CallerLimitSettings,
): CallerLimit[] {
  const limits: CallerLimit[] = [];
  if (settings.perApiKey > 0 && caller.kind === CallerKind.API_KEY && caller.keyDigest !== undefined) {
    limits.push({ counter: `key:${caller.keyDigest}`, limit: settings.perApiKey, scope: 'api_key' });
  }
  if (settings.perAccount > 0) {
    limits.push({ counter: `account:${accountId}`, limit: settings.perAccount, scope: 'account' });
  }
  return limits;
}

/** How a refusal names the scope: "account" or "API key". */
export function scopeName(scope: CallerLimit['scope']): string {
  return scope === 'account' ? 'account' : 'API key';
}
