/**
 * How fast tasks may be submitted: a token bucket per account and one per API key, refilled at the
 * configured tasks per second and holding at most one second's worth (so a quiet caller may send that
 * many at once, never more). Over the limit a submission is refused with 429 RATE_LIMITED and a
 * Retry-After saying when a token is back, before anything is written to the bus.
 *
 * The buckets live in this gateway's memory, so with N gateways behind a balancer an account may submit
 * N times the rate; configure rate / N per instance for a mesh-wide limit.
 */
import type { Caller } from './auth.js';
import { callerLimits, scopeName } from './caller-limits.js';
import { RateLimited } from './errors.js';

export interface SubmissionRates {
  /** Tasks per second one account may submit; 0: no limit. */
  perAccount: number;
  /** Tasks per second one API key may submit; 0: no limit. */
  perApiKey: number;
}

/** Buckets kept before full (idle) ones are dropped: a full bucket is the same as none. */
const MAX_BUCKETS = 10_000;

interface Bucket {
  tokens: number;
  /** When `tokens` was last brought up to date, in ms of the limiter's clock. */
  at: number;
}

export class SubmissionRateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly rates: SubmissionRates,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * Takes one token from each bucket the submission counts against, or none and the 429 of the first
   * that is empty (the per-key bucket first: it is the narrower one).
   */
  admit(caller: Caller, accountId: string): RateLimited | undefined {
    const now = this.now();
    const buckets = callerLimits(caller, accountId, this.rates).map((check) => ({
      check,
      bucket: this.refilled(check.counter, check.limit, now),
    }));
    for (const { check, bucket } of buckets) {
      if (bucket.tokens < 1) {
        const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / check.limit));
        return new RateLimited(
          `more than ${check.limit} tasks per second submitted for this ${scopeName(check.scope)}; retry later`,
          waitSeconds,
          // Said in the body too: a NATS ingress reply has no Retry-After header.
          { scope: check.scope, limit_per_second: check.limit, retry_after_seconds: waitSeconds },
        );
      }
    }
    for (const { bucket } of buckets) bucket.tokens -= 1;
    return undefined;
  }

  private refilled(key: string, rate: number, now: number): Bucket {
    const capacity = Math.max(1, rate);
    let bucket = this.buckets.get(key);
    if (bucket === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) this.dropFull(now);
      bucket = { tokens: capacity, at: now };
      this.buckets.set(key, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * rate);
    bucket.at = now;
    return bucket;
  }

  /** Forgets buckets that have refilled by now; they would start full anyway. */
  private dropFull(now: number): void {
    for (const [key, bucket] of this.buckets) {
      const rate = key.startsWith('key:') ? this.rates.perApiKey : this.rates.perAccount;
      if (bucket.tokens + ((now - bucket.at) / 1000) * rate >= Math.max(1, rate)) this.buckets.delete(key);
    }
  }
}
