/**
 * Memory first, then the shared KV store, then the loader (the upstream). A value loaded is kept in both;
 * a value found in KV is kept in memory until the KV entry's own expiry. Concurrent misses for one key
 * share one load. The shared store is an optimisation: when it fails, the failure is reported and the
 * request goes on as a miss.
 */
import type { KvCacheStore } from './kv-cache-store.js';
import type { TtlLruCache } from './ttl-lru-cache.js';

export const CacheSource = {
  MEMORY: 'memory',
  SHARED: 'shared',
  UPSTREAM: 'upstream',
} as const;
export type CacheSource = (typeof CacheSource)[keyof typeof CacheSource];

export interface Cached<V> {
  value: V;
  source: CacheSource;
}

export interface LayeredCacheOptions<V> {
  memory: TtlLruCache<V>;
  shared?: KvCacheStore<V> | undefined;
  /** Values for which this returns false stay in memory only (e.g. they carry secret-named fields). */
  shareable?: (value: V) => boolean;
  onSharedError?: (operation: 'get' | 'put', error: unknown) => void;
  /**
   * Told where each lookup's value came from: a lookup that joins a load in flight gets what that load
   * found, and a failed load counts as {@link CacheSource.UPSTREAM} (a miss).
   */
  onLookup?: (source: CacheSource) => void;
}

export class LayeredCache<V> {
  readonly #inFlight = new Map<string, Promise<Cached<V>>>();

  constructor(private readonly options: LayeredCacheOptions<V>) {}

  async getOrLoad(key: string, load: () => Promise<V>): Promise<Cached<V>> {
    const { onLookup } = this.options;
    if (onLookup === undefined) return this.#getOrLoad(key, load);
    try {
      const cached = await this.#getOrLoad(key, load);
      onLookup(cached.source);
      return cached;
    } catch (error) {
      onLookup(CacheSource.UPSTREAM);
      throw error;
    }
  }

  async #getOrLoad(key: string, load: () => Promise<V>): Promise<Cached<V>> {
    const remembered = this.options.memory.get(key);
    if (remembered !== undefined) return { value: remembered, source: CacheSource.MEMORY };
    const pending = this.#inFlight.get(key);
    if (pending !== undefined) return pending;
    const loading = this.#lookUpOrLoad(key, load).finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, loading);
    return loading;
  }

  async #lookUpOrLoad(key: string, load: () => Promise<V>): Promise<Cached<V>> {
    const { memory, shared, shareable, onSharedError } = this.options;
    if (shared !== undefined) {
      try {
        const entry = await shared.get(key);
        if (entry !== undefined) {
          memory.set(key, entry.value, entry.expiresAt);
          return { value: entry.value, source: CacheSource.SHARED };
        }
      } catch (error) {
        onSharedError?.('get', error);
      }
    }
    const value = await load();
    memory.set(key, value);
    if (shared !== undefined && (shareable?.(value) ?? true)) {
      await shared.put(key, value).catch((error: unknown) => onSharedError?.('put', error));
    }
    return { value, source: CacheSource.UPSTREAM };
  }
}
