import type { AccountDailyUsage } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { AccountDailyCaps, secondsToNextUtcDay, type AccountDailyCapsOptions } from './account-daily-caps.js';
import { DailyCostCapReached, DailyTokenCapReached } from './errors.js';

const NOON = Date.parse('2026-11-24T12:00:00.000Z');

/** Usage by `<account>.<day>`, counting the reads. */
function usageOf(entries: Record<string, Partial<AccountDailyUsage>>) {
  const reads: string[] = [];
  return {
    reads,
    store: {
      get: async (accountId: string, day: string): Promise<AccountDailyUsage> => {
        reads.push(`${accountId}.${day}`);
        return {
          account_id: accountId,
          day,
          total_tokens: 0,
          cost_usd: 0,
          tasks: 0,
          ...entries[`${accountId}.${day}`],
        };
      },
    },
  };
}

function caps(
  options: Partial<AccountDailyCapsOptions> & Pick<AccountDailyCapsOptions, 'usage'>,
): AccountDailyCaps {
  return new AccountDailyCaps({
    defaults: {},
    perAccount: new Map(),
    cacheMs: 0,
    now: () => NOON,
    ...options,
  });
}

describe("accounts' daily caps", () => {
  it('when an account has used its token cap today, it is refused RATE_LIMITED with a Retry-After to the next UTC day', async () => {
    const { store } = usageOf({ 'acme.2026-11-24': { total_tokens: 1000 } });
    const refusal = await caps({ defaults: { tokens: 1000 }, usage: store }).check('acme');
    expect(refusal).toBeInstanceOf(DailyTokenCapReached);
    expect(refusal?.code).toBe('RATE_LIMITED');
    expect(refusal?.httpStatus).toBe(429);
    expect(refusal?.retryable).toBe(true);
    expect(refusal?.headers).toEqual({ 'retry-after': String(12 * 3600) });
    expect(refusal?.message).toBe(
      'this account used 1000 tokens today (UTC) of its daily cap of 1000; retry after the day ends',
    );
  });

  it('when an account has spent its cost cap today, it is refused BUDGET_EXCEEDED (402)', async () => {
    const { store } = usageOf({ 'acme.2026-11-24': { total_tokens: 10, cost_usd: 5.5 } });
    const refusal = await caps({ defaults: { tokens: 1000, cost_usd: 5 }, usage: store }).check('acme');
    expect(refusal).toBeInstanceOf(DailyCostCapReached);
    expect(refusal?.code).toBe('BUDGET_EXCEEDED');
    expect(refusal?.httpStatus).toBe(402);
    expect(refusal?.retryable).toBe(false);
  });

  it("yesterday's use and another account's do not count, and an account under its caps goes on", async () => {
    const { store } = usageOf({
      'acme.2026-11-23': { total_tokens: 5000 },
      'other.2026-11-24': { total_tokens: 5000 },
    });
    expect(await caps({ defaults: { tokens: 1000 }, usage: store }).check('acme')).toBeUndefined();
  });

  it("an account's own caps replace the defaults field by field; 0 lifts a cap, and an uncapped account costs no read", async () => {
    const { store, reads } = usageOf({
      'acme.2026-11-24': { total_tokens: 5000, cost_usd: 1 },
      'free.2026-11-24': { total_tokens: 5000, cost_usd: 100 },
    });
    const limiter = caps({
      defaults: { tokens: 1000, cost_usd: 50 },
      perAccount: new Map([
        ['acme', { tokens: 10_000 }],
        ['free', { tokens: 0, cost_usd: 0 }],
      ]),
      usage: store,
    });
    expect(limiter.capsOf('acme')).toEqual({ tokens: 10_000, cost_usd: 50 });
    expect(await limiter.check('acme')).toBeUndefined();
    expect(await limiter.check('free')).toBeUndefined();
    expect(reads).toEqual(['acme.2026-11-24']);
    expect(caps({ usage: store }).active).toBe(false);
    expect(limiter.active).toBe(true);
  });

  it("with a cache time, an account's use is read once per interval", async () => {
    let now = NOON;
    const { store, reads } = usageOf({});
    const limiter = caps({ defaults: { tokens: 1000 }, usage: store, cacheMs: 2_000, now: () => now });
    await limiter.check('acme');
    await limiter.check('acme');
    now += 2_000;
    await limiter.check('acme');
    expect(reads).toHaveLength(2);
  });

  it('the next UTC day is counted from any time of the day', () => {
    expect(secondsToNextUtcDay(Date.parse('2026-11-24T23:59:59.500Z'))).toBe(1);
    expect(secondsToNextUtcDay(Date.parse('2026-11-24T00:00:00.000Z'))).toBe(86_400);
  });
});
