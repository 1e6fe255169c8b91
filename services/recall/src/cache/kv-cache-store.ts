/**
 * A cache shared by every recall instance, in a JetStream KV bucket. Each entry records when it expires,
 * so an instance honours its own TTL whatever the bucket's age limit (which only bounds the bucket's
 * size). Keys are SHA-256 digests of the cache key: legal KV keys whatever the ids hold, and no account
 * or object identity in key names. What comes back is validated; a bad or unreadable entry is a miss.
 */
import { createHash } from 'node:crypto';
import type { KV } from '@nats-io/kv';
import { z } from 'zod';

export interface KvCacheStoreOptions<V> {
  kv: KV;
  /** Validates entries read back (another version of the service may have written them). */
  schema: z.ZodType<V>;
  ttlMs: number;
  now?: () => number;
}

export interface SharedEntry<V> {
  value: V;
  expiresAt: number;
}

export class KvCacheStore<V> {
  readonly #kv: KV;
  readonly #entry: z.ZodType<{ expires_at: number; value: V }>;
  readonly #ttlMs: number;
  readonly #now: () => number;

  constructor(options: KvCacheStoreOptions<V>) {
    this.#kv = options.kv;
    this.#entry = z.object({ expires_at: z.number(), value: options.schema }) as z.ZodType<{
      expires_at: number;
      value: V;
    }>;
    this.#ttlMs = options.ttlMs;
    this.#now = options.now ?? Date.now;
  }

  /** The live entry for `key`, or undefined (missing, expired, deleted or unreadable). */
  async get(key: string): Promise<SharedEntry<V> | undefined> {
    const stored = await this.#kv.get(kvKey(key));
    if (stored === null || stored.operation !== 'PUT' || stored.length === 0) return undefined;
    let raw: unknown;
    try {
      raw = stored.json();
    } catch {
      return undefined;
    }
    const parsed = this.#entry.safeParse(raw);
    if (!parsed.success || parsed.data.expires_at <= this.#now()) return undefined;
    return { value: parsed.data.value, expiresAt: parsed.data.expires_at };
  }

  async put(key: string, value: V): Promise<void> {
    await this.#kv.put(kvKey(key), JSON.stringify({ expires_at: this.#now() + this.#ttlMs, value }));
  }
}

function kvKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}
