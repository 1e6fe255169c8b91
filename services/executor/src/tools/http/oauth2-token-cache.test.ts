import { describe, expect, it } from 'vitest';
import { OAuth2TokenCache, type OAuth2AccessToken, type OAuth2TokenKey } from './oauth2-token-cache.js';

const key: OAuth2TokenKey = {
  tokenUrl: 'https://auth.example/token',
  clientId: 'client-1',
  clientSecret: 'secret-1',
  scopes: ['b', 'a'],
};

/** A token source that numbers its tokens and counts its fetches. */
function tokenSource(expiresInSeconds?: number) {
  let count = 0;
  const fetchToken = async (): Promise<OAuth2AccessToken> => {
    count += 1;
    const accessToken = `token-${count}`;
    return expiresInSeconds === undefined ? { accessToken } : { accessToken, expiresInSeconds };
  };
  return { fetchToken, fetches: () => count };
}

describe('OAuth2TokenCache', () => {
  it('when concurrent callers want the same token, one fetch serves them all', async () => {
    const cache = new OAuth2TokenCache();
    let release: (token: OAuth2AccessToken) => void = () => {};
    let fetches = 0;
    const fetchToken = () => {
      fetches += 1;
      return new Promise<OAuth2AccessToken>((resolve) => (release = resolve));
    };

    const waiting = [
      cache.getToken(key, fetchToken),
      cache.getToken(key, fetchToken),
      cache.getToken(key, fetchToken),
    ];
    release({ accessToken: 'shared', expiresInSeconds: 60 });

    expect(await Promise.all(waiting)).toEqual(['shared', 'shared', 'shared']);
    expect(fetches).toBe(1);
  });

  it('when scopes are listed in another order, the same token is used', async () => {
    const cache = new OAuth2TokenCache();
    const source = tokenSource(60);

    await cache.getToken(key, source.fetchToken);
    await cache.getToken({ ...key, scopes: ['a', 'b'] }, source.fetchToken);

    expect(source.fetches()).toBe(1);
  });

  it('when the client secret differs, the cached token of the other secret is not handed out', async () => {
    const cache = new OAuth2TokenCache();
    const source = tokenSource(60);

    await cache.getToken(key, source.fetchToken);
    const other = await cache.getToken({ ...key, clientSecret: 'guessed' }, source.fetchToken);

    expect(other).toBe('token-2');
  });

  it('when the clock passes expiry minus the refresh margin, a new token is fetched', async () => {
    let now = 0;
    const cache = new OAuth2TokenCache({ now: () => now, refreshMarginMs: 30_000 });
    const source = tokenSource(3600);

    await cache.getToken(key, source.fetchToken);
    now = 3_569_000;
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-1');
    now = 3_570_000;
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-2');
  });

  it('when the endpoint gives no expires_in, the default lifetime applies', async () => {
    let now = 0;
    const cache = new OAuth2TokenCache({ now: () => now, defaultLifetimeMs: 60_000, refreshMarginMs: 0 });
    const source = tokenSource();

    await cache.getToken(key, source.fetchToken);
    now = 59_999;
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-1');
    now = 60_000;
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-2');
  });

  it('when a rejected token is invalidated, the next caller fetches anew; a stale invalidation leaves a newer token alone', async () => {
    const cache = new OAuth2TokenCache();
    const source = tokenSource(3600);

    await cache.getToken(key, source.fetchToken);
    cache.invalidate(key, 'token-1');
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-2');
    cache.invalidate(key, 'token-1');
    expect(await cache.getToken(key, source.fetchToken)).toBe('token-2');
  });

  it('when a fetch fails, the failure is not cached', async () => {
    const cache = new OAuth2TokenCache();
    const failing = () => Promise.reject(new Error('token endpoint down'));

    await expect(cache.getToken(key, failing)).rejects.toThrow('token endpoint down');
    await expect(
      cache.getToken(key, async () => ({ accessToken: 'later', expiresInSeconds: 60 })),
    ).resolves.toBe('later');
  });

  it('when more clients than maxEntries hold tokens, the oldest are dropped', async () => {
    const cache = new OAuth2TokenCache({ maxEntries: 2 });
    const source = tokenSource(3600);

    for (const clientId of ['a', 'b', 'c']) await cache.getToken({ ...key, clientId }, source.fetchToken);
    await cache.getToken({ ...key, clientId: 'c' }, source.fetchToken);
    await cache.getToken({ ...key, clientId: 'a' }, source.fetchToken);

    expect(source.fetches()).toBe(4);
  });
});
