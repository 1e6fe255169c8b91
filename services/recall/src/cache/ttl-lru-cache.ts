/**
 * An in-memory cache bounded both in size (least recently used entries go first) and in age (an entry
 * older than its time to live is never returned). A Map keeps insertion order, which serves as recency.
 */

export interface TtlLruCacheOptions {
  maxEntries: number;
  ttlMs: number;
  /** Clock in milliseconds; injectable so expiry can be tested without waiting. */
  now?: () => number;
}

interface Entry<V> {
  value: V;
  expiresAt: number;
}

export class TtlLruCache<V> {
  readonly #entries = new Map<string, Entry<V>>();
  readonly #maxEntries: number;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: TtlLruCacheOptions) {
    if (!(options.maxEntries >= 1)) throw new RangeError('maxEntries must be at least 1');
    this.#maxEntries = options.maxEntries;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    this.#entries.delete(key);
    if (entry.expiresAt <= this.#now()) return undefined;
    this.#entries.set(key, entry); // most recently used goes last
    return entry.value;
  }

  /** Stores `value` until `expiresAt` (default: now + the cache's time to live). */
  set(key: string, value: V, expiresAt: number = this.#now() + this.#ttlMs): void {
    this.#entries.delete(key);
    if (expiresAt <= this.#now()) return;
    this.#entries.set(key, { value, expiresAt });
    while (this.#entries.size > this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done) break;
      this.#entries.delete(oldest.value);
    }
  }

  clear(): void {
    this.#entries.clear();
  }
}
