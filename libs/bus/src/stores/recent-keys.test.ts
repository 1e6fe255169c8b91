import { describe, expect, it } from 'vitest';
import { lastDistinctKeys } from './recent-keys.js';

async function* listed(...keys: string[]): AsyncGenerator<string> {
  yield* keys;
}

describe('lastDistinctKeys', () => {
  it('when more keys come than asked for, it keeps the last ones in order', async () => {
    expect(await lastDistinctKeys(listed('a', 'b', 'c', 'd'), 2)).toEqual(['c', 'd']);
  });

  it('when a key written during the listing comes round again, it is kept once, at its later place', async () => {
    expect(await lastDistinctKeys(listed('a', 'b', 'c', 'a'), 3)).toEqual(['b', 'c', 'a']);
    expect(await lastDistinctKeys(listed('a', 'b', 'b'), 5)).toEqual(['a', 'b']);
  });
});
