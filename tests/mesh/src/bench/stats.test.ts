import { describe, expect, it } from 'vitest';
import { median, percentile, summarise } from './stats.js';

describe('benchmark statistics', () => {
  it('nearest-rank percentiles of 1..100 are the rank itself', () => {
    const samples = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(samples, 50)).toBe(50);
    expect(percentile(samples, 99)).toBe(99);
    expect(percentile(samples, 100)).toBe(100);
  });

  it('a summary of unsorted samples sorts them first', () => {
    expect(summarise([30, 10, 20])).toEqual({ count: 3, p50_ms: 20, p99_ms: 30, mean_ms: 20 });
  });

  it('the median of three passes is the middle one whatever their order', () => {
    expect(median([9, 1, 5])).toBe(5);
  });

  it('the median of an even count is the mean of the two middle values', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('the median of nothing is NaN, not zero', () => {
    expect(median([])).toBeNaN();
  });
});
