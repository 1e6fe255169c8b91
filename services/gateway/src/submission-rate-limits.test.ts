import { describe, expect, it } from 'vitest';
import { CallerKind, type Caller } from './auth.js';
import { RateLimited } from './errors.js';
import { SubmissionRateLimiter } from './submission-rate-limits.js';

const keyCaller = (digest: string, accountId = 'acme'): Caller => ({
  kind: CallerKind.API_KEY,
  accountId,
  keyDigest: digest,
});

describe('submission rate limits', () => {
  it('when an API key submits more than its rate within a second, the surplus is refused with RATE_LIMITED and a Retry-After; another key is not', () => {
    let now = 0;
    const limiter = new SubmissionRateLimiter({ perAccount: 0, perApiKey: 3 }, () => now);
    const outcomes = Array.from({ length: 5 }, () => limiter.admit(keyCaller('k1'), 'acme'));
    expect(outcomes.slice(0, 3)).toEqual([undefined, undefined, undefined]);
    const refused = outcomes[3];
    expect(refused).toBeInstanceOf(RateLimited);
    expect(refused?.headers['retry-after']).toBe('1');
    expect(refused?.detail).toEqual({ scope: 'api_key', limit_per_second: 3, retry_after_seconds: 1 });
    expect(limiter.admit(keyCaller('k2'), 'acme')).toBeUndefined();
    // A third of a second later one token is back, and only one.
    now = 334;
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeUndefined();
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeInstanceOf(RateLimited);
  });

  it('the account limit counts every caller of the account together, admin and trusted callers included', () => {
    const limiter = new SubmissionRateLimiter({ perAccount: 2, perApiKey: 0 }, () => 0);
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeUndefined();
    expect(limiter.admit({ kind: CallerKind.TRUSTED, accountId: 'acme' }, 'acme')).toBeUndefined();
    const refused = limiter.admit({ kind: CallerKind.ADMIN }, 'acme');
    expect(refused).toBeInstanceOf(RateLimited);
    expect(refused?.detail).toMatchObject({ scope: 'account', limit_per_second: 2 });
    expect(limiter.admit(keyCaller('k9', 'other'), 'other')).toBeUndefined();
  });

  it('a refused submission takes no token: refused by the account limit, the key keeps its share', () => {
    const limiter = new SubmissionRateLimiter({ perAccount: 1, perApiKey: 2 }, () => 0);
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeUndefined();
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeInstanceOf(RateLimited); // the account is empty
    // The key's second token is still there (the bucket is per key; the account here is a fresh one).
    expect(limiter.admit(keyCaller('k1', 'other'), 'other')).toBeUndefined();
    expect(limiter.admit(keyCaller('k1', 'third'), 'third')?.detail).toMatchObject({ scope: 'api_key' });
  });

  it('a slow rate tells the client to wait as long as a token takes to come back', () => {
    const limiter = new SubmissionRateLimiter({ perAccount: 0.1, perApiKey: 0 }, () => 0);
    expect(limiter.admit(keyCaller('k1'), 'acme')).toBeUndefined();
    expect(limiter.admit(keyCaller('k1'), 'acme')?.headers['retry-after']).toBe('10');
  });

  it('with both rates 0, nothing is ever refused', () => {
    const limiter = new SubmissionRateLimiter({ perAccount: 0, perApiKey: 0 }, () => 0);
    for (let i = 0; i < 1000; i++) expect(limiter.admit(keyCaller('k1'), 'acme')).toBeUndefined();
  });
});
