import { describe, expect, it } from 'vitest';
import { RecentKeys } from './recent-keys.js';

function lastDistinct(limit: number, ...listed: string[]): string[] {
  const recent = new RecentKeys(limit);
  for (const key of listed) recent.add(key);
  return recent.keys();
}

describe('RecentKeys', () => {
  it('when more keys come than asked for, it keeps the last ones in order', () => {
    expect(lastDistinct(2, 'a', 'b', 'c', 'd')).toEqual(['c', 'd']);
  });

  it('when a key written during the listing comes round again, it is kept once, at its later place', () => {
    expect(lastDistinct(3, 'a', 'b', 'c', 'a')).toEqual(['b', 'c', 'a']);
    expect(lastDistinct(5, 'a', 'b', 'b')).toEqual(['a', 'b']);
  });
});
