import { describe, expect, it } from 'vitest';
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, backoffDelayMs } from './backoff.js';

describe('retry backoff', () => {
  it('when attempts fail one after another, the bound doubles up to the cap and the delay is jittered below it', () => {
    const almostOne = () => 0.999_999;
    expect(backoffDelayMs(1, almostOne)).toBe(BACKOFF_BASE_MS - 1);
    expect(backoffDelayMs(2, almostOne)).toBe(2 * BACKOFF_BASE_MS - 1);
    expect(backoffDelayMs(20, almostOne)).toBe(BACKOFF_MAX_MS - 1);
    expect(backoffDelayMs(3, () => 0)).toBe(0);
    expect(backoffDelayMs(3, () => 0.5)).toBe(2 * BACKOFF_BASE_MS);
  });
});
