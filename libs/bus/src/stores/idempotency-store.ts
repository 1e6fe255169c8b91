/**
 * Idempotent submission: the first submission with a key claims it for its trace_id (an atomic KV
 * create); later submissions with the same key from the same account get that trace_id back and run
 * nothing. Keys are hashed, so they may be any string.
 */
import type { KV } from '@nats-io/kv';
import { sha256Hex } from '../kv-keys.js';

export interface IdempotencyClaim {
  traceId: string;
  /** True for the submission that claimed the key; false for a repeat. */
  claimed: boolean;
}

export class IdempotencyStore {
  constructor(private readonly kv: KV) {}

  async claim(accountId: string, key: string, traceId: string): Promise<IdempotencyClaim> {
    const kvKey = `${accountId}.${sha256Hex(key)}`;
    try {
      await this.kv.create(kvKey, traceId);
      return { traceId, claimed: true };
    } catch (error) {
      const existing = await this.kv.get(kvKey);
      if (existing?.operation === 'PUT') return { traceId: existing.string(), claimed: false };
      throw error;
    }
  }
}
