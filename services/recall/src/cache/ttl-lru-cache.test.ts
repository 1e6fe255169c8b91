import { describe, expect, it } from 'vitest';
import { TtlLruCache } from './ttl-lru-cache.js';

function clock() {
  let now = 1_000;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

describe('TtlLruCache', () => {
  it('when an entry outlives its time to live, it is a miss', () => {
    const time = clock();
    const cache = new TtlLruCache<string>({ maxEntries: 10, ttlMs: 100, now: time.now });
    cache.set('k', 'v');
    time.advance(99);
    expect(cache.get('k')).toBe('v');
    time.advance(1);
    expect(cache.get('k')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('when full, the least recently used entry is evicted, not the least recently stored', () => {
    const cache = new TtlLruCache<number>({ maxEntries: 2, ttlMs: 1_000 });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1); // a is now more recent than b
    cache.set('c', 3);
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBe(1);
    expect(cache.get('c')).toBe(3);
  });

  it('when given an explicit expiry (from a shared entry), it keeps the entry only until then', () => {
    const time = clock();
    const cache = new TtlLruCache<string>({ maxEntries: 10, ttlMs: 10_000, now: time.now });
    cache.set('k', 'v', time.now() + 50);
    time.advance(50);
    expect(cache.get('k')).toBeUndefined();
    cache.set('gone', 'v', time.now() - 1);
    expect(cache.size).toBe(0);
  });
});
