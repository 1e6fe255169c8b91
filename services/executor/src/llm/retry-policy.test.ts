import { describe, expect, it } from 'vitest';
import { LlmAbortedError } from './errors.js';
import {
  backoffDelayMs,
  isRetryableStatus,
  parseRetryAfter,
  retryDelayMs,
  waitBeforeRetry,
} from './retry-policy.js';

const NOW = Date.parse('2026-03-01T12:00:00Z');
const backoff = { initialMs: 100, maxMs: 1_000, multiplier: 2 };

describe('Retry-After parsing', () => {
  it('when Retry-After is delta-seconds, the wait is that many seconds', () => {
    expect(parseRetryAfter({ retryAfter: '7' }, NOW)).toBe(7_000);
    expect(parseRetryAfter({ retryAfter: ' 0 ' }, NOW)).toBe(0);
    expect(parseRetryAfter({ retryAfter: '1.5' }, NOW)).toBe(1_500);
  });

  it('when Retry-After is an HTTP date, the wait lasts until then, and a past date means no wait', () => {
    expect(parseRetryAfter({ retryAfter: 'Sun, 01 Mar 2026 12:00:30 GMT' }, NOW)).toBe(30_000);
    expect(parseRetryAfter({ retryAfter: 'Sun, 01 Mar 2026 11:00:00 GMT' }, NOW)).toBe(0);
  });

  it('when retry-after-ms is present, it wins over Retry-After', () => {
    expect(parseRetryAfter({ retryAfter: '7', retryAfterMs: '250' }, NOW)).toBe(250);
  });

  it('when the header is missing or unreadable, there is no server-given wait', () => {
    expect(parseRetryAfter({}, NOW)).toBeUndefined();
    expect(parseRetryAfter({ retryAfter: '' }, NOW)).toBeUndefined();
    expect(parseRetryAfter({ retryAfter: '-5' }, NOW)).toBeUndefined();
    expect(parseRetryAfter({ retryAfter: 'soon' }, NOW)).toBeUndefined();
    expect(parseRetryAfter({ retryAfterMs: 'abc', retryAfter: '2' }, NOW)).toBe(2_000);
  });
});

describe('backoff', () => {
  it('when the jitter draws its extremes, the wait spans zero to the exponential bound', () => {
    expect(backoffDelayMs(1, backoff, () => 0)).toBe(0);
    expect(backoffDelayMs(1, backoff, () => 0.999_999)).toBe(99);
    expect(backoffDelayMs(3, backoff, () => 0.999_999)).toBe(399);
  });

  it('when retries pile up, the bound stops growing at maxMs', () => {
    expect(backoffDelayMs(20, backoff, () => 0.999_999)).toBe(999);
  });

  it('whatever the jitter draws, every wait stays within [0, bound]', () => {
    for (let retry = 1; retry <= 8; retry++) {
      const bound = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (retry - 1));
      for (const draw of [0, 0.1, 0.5, 0.9, 0.999]) {
        const wait = backoffDelayMs(retry, backoff, () => draw);
        expect(wait).toBeGreaterThanOrEqual(0);
        expect(wait).toBeLessThanOrEqual(bound);
      }
    }
  });

  it('when the server gave a wait, it is used as given but never beyond the cap', () => {
    const wait = { retry: 1, backoff, maxRetryAfterMs: 5_000, random: () => 0.5 };
    expect(retryDelayMs({ ...wait, retryAfterMs: 2_000 })).toBe(2_000);
    expect(retryDelayMs({ ...wait, retryAfterMs: 90_000 })).toBe(5_000);
    expect(retryDelayMs({ ...wait, retryAfterMs: undefined })).toBe(50);
  });

  it('429, 408 and 5xx are worth retrying; other 4xx are not', () => {
    expect([429, 408, 500, 502, 503, 504].every(isRetryableStatus)).toBe(true);
    expect([400, 401, 403, 404, 422].some(isRetryableStatus)).toBe(false);
  });
});

describe('waitBeforeRetry', () => {
  const wait = { backoff, maxRetryAfterMs: 5_000, random: () => 0.5, attempts: 2 };

  it('when the server named a wait, that wait is slept (capped); else the backoff is', async () => {
    const slept: number[] = [];
    const sleep = async (ms: number) => void slept.push(ms);
    await waitBeforeRetry({ ...wait, retry: 1, retryAfterMs: 9_000, signal: undefined, sleep });
    await waitBeforeRetry({ ...wait, retry: 2, retryAfterMs: undefined, signal: undefined, sleep });
    expect(slept).toEqual([5_000, 100]);
  });

  it('when the caller aborts during the wait, it ends with LlmAbortedError naming the attempts made', async () => {
    const controller = new AbortController();
    const sleep = (_ms: number, signal?: AbortSignal) =>
      new Promise<void>((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(new Error('aborted')));
        controller.abort(new Error('cancelled by the user'));
      });
    const error = await waitBeforeRetry({
      ...wait,
      retry: 1,
      retryAfterMs: undefined,
      signal: controller.signal,
      sleep,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmAbortedError);
    expect((error as LlmAbortedError).detail.attempts).toBe(2);
  });
});
