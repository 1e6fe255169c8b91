// OAuth2 client-credentials tokens shared by every task of the executor. A token is reused until shortly
// before it expires; concurrent callers wanting the same token share one request to the token endpoint; a
// token an API rejected is dropped so the next caller fetches a fresh one. The cache key includes a hash of
// the client secret: a tool that knows another account's client id but not its secret gets no token of theirs.
import { createHash } from 'node:crypto';

export interface OAuth2TokenKey {
  readonly tokenUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly scopes?: readonly string[];
  readonly audience?: string;
}

export interface OAuth2AccessToken {
  readonly accessToken: string;
  /** `expires_in` of the token response; absent means the endpoint did not say. */
  readonly expiresInSeconds?: number;
}

export interface OAuth2TokenCacheOptions {
  /** Milliseconds since the epoch; injectable so tests can move time. */
  readonly now?: () => number;
  /** Refresh this long before expiry (at most half the token's lifetime). Default 30 s. */
  readonly refreshMarginMs?: number;
  /** Lifetime assumed when the endpoint gives no `expires_in`. Default 5 min. */
  readonly defaultLifetimeMs?: number;
  /** Bound on cached tokens; the oldest go first. Default 1000. */
  readonly maxEntries?: number;
}

interface CachedToken {
  readonly accessToken: string;
  readonly usableUntil: number;
}

export class OAuth2TokenCache {
  readonly #now: () => number;
  readonly #refreshMarginMs: number;
  readonly #defaultLifetimeMs: number;
  readonly #maxEntries: number;
  readonly #tokens = new Map<string, CachedToken>();
  readonly #inFlight = new Map<string, Promise<string>>();

  constructor(options: OAuth2TokenCacheOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#refreshMarginMs = options.refreshMarginMs ?? 30_000;
    this.#defaultLifetimeMs = options.defaultLifetimeMs ?? 300_000;
    this.#maxEntries = options.maxEntries ?? 1000;
  }

  /** A usable token for `key`: the cached one, the one being fetched, or one from `fetchToken`. */
  getToken(key: OAuth2TokenKey, fetchToken: () => Promise<OAuth2AccessToken>): Promise<string> {
    const id = cacheId(key);
    const cached = this.#tokens.get(id);
    if (cached !== undefined && cached.usableUntil > this.#now()) return Promise.resolve(cached.accessToken);
    const pending = this.#inFlight.get(id);
    if (pending !== undefined) return pending;
    const fetching = this.#fetch(id, fetchToken).finally(() => this.#inFlight.delete(id));
    this.#inFlight.set(id, fetching);
    return fetching;
  }

  /** Drops `accessToken` (rejected by an API) unless a newer token has replaced it already. */
  invalidate(key: OAuth2TokenKey, accessToken: string): void {
    const id = cacheId(key);
    if (this.#tokens.get(id)?.accessToken === accessToken) this.#tokens.delete(id);
  }

  async #fetch(id: string, fetchToken: () => Promise<OAuth2AccessToken>): Promise<string> {
    const token = await fetchToken();
    const obtainedAt = this.#now();
    const lifetime =
      token.expiresInSeconds === undefined ? this.#defaultLifetimeMs : token.expiresInSeconds * 1000;
    const usableUntil = obtainedAt + lifetime - Math.min(this.#refreshMarginMs, lifetime / 2);
    if (usableUntil > obtainedAt) this.#store(id, { accessToken: token.accessToken, usableUntil });
    return token.accessToken;
  }

  #store(id: string, token: CachedToken): void {
    this.#tokens.delete(id);
    this.#tokens.set(id, token);
    if (this.#tokens.size <= this.#maxEntries) return;
    const now = this.#now();
    for (const [otherId, other] of this.#tokens) if (other.usableUntil <= now) this.#tokens.delete(otherId);
    for (const otherId of this.#tokens.keys()) {
      if (this.#tokens.size <= this.#maxEntries) break;
      this.#tokens.delete(otherId);
    }
  }
}

function cacheId(key: OAuth2TokenKey): string {
  const secretHash = createHash('sha256').update(key.clientSecret).digest('base64url');
  const scopes = [...(key.scopes ?? [])].sort();
  return JSON.stringify([key.tokenUrl, key.clientId, secretHash, scopes, key.audience ?? null]);
}
