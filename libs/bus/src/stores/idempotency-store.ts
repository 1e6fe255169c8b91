/**
 * Idempotent submission: the first submission with a key claims it for its trace_id and the digest of
 * its request (an atomic KV create); a later submission with the same key from the same account gets
 * that trace_id back and learns whether it carried the same request, and runs nothing. Keys are
 * hashed, so they may be any string.
 *
 * An entry is `{"trace_id", "request_digest"}`, the digest being HMAC-SHA256 of the request's canonical
 * JSON (`canonicalJson`: key order and absent members do not matter) under a key the gateway derives
 * from its secrets: a pre-assembled request holds a clear vault, and an unkeyed digest of it in a bucket
 * would let anyone who reads the bucket test guesses of a secret against it. Entries written before digests
 * were kept hold the bare trace id; a repeat against one of those counts as the same request, since
 * nothing says otherwise and refusing it would fail an upstream retrying across the upgrade. Such
 * entries are gone once the bucket's TTL (a day) has passed.
 */
import { createHmac } from 'node:crypto';
import { canonicalJson, isTraceId, TraceId } from '@agentmesh/protocol';
import type { KV, KvEntry } from '@nats-io/kv';
import { z } from 'zod';
import { CorruptRecordError } from '../errors.js';
import { decodeJson, encodeJson } from '../json.js';
import { sha256Hex } from '../kv-keys.js';

const IdempotencyEntry = z.strictObject({
  trace_id: TraceId,
  request_digest: z.string().regex(/^[0-9a-f]{64}$/),
});

export interface IdempotencyClaim {
  traceId: string;
  /** True for the submission that claimed the key; false for a repeat. */
  claimed: boolean;
  /**
   * Whether this submission's request is the one the key was claimed with. Always true for the claim
   * itself, and for a repeat of an entry written before digests were kept.
   */
  sameRequest: boolean;
}

export class IdempotencyStore {
  /** `digestKey`: the HMAC key of request digests (32 secret bytes; the same on every gateway). */
  constructor(
    private readonly kv: KV,
    private readonly digestKey: Uint8Array,
  ) {}

  /**
   * Claims `key` for `traceId` and `request`, or reads the earlier claim. `request` must be JSON data
   * (it is digested as canonical JSON); pass the validated request, so that two bodies meaning the
   * same thing count as the same request.
   */
  async claim(accountId: string, key: string, traceId: string, request: unknown): Promise<IdempotencyClaim> {
    const kvKey = `${accountId}.${sha256Hex(key)}`;
    const digest = createHmac('sha256', this.digestKey).update(canonicalJson(request), 'utf8').digest('hex');
    try {
      await this.kv.create(kvKey, encodeJson({ trace_id: traceId, request_digest: digest }));
      return { traceId, claimed: true, sameRequest: true };
    } catch (error) {
      const existing = await this.kv.get(kvKey);
      if (existing?.operation !== 'PUT') throw error;
      const entry = readEntry(existing, `mesh_idempotency/${kvKey}`);
      return {
        traceId: entry.trace_id,
        claimed: false,
        sameRequest: entry.request_digest === undefined || entry.request_digest === digest,
      };
    }
  }
}

function readEntry(entry: KvEntry, where: string): { trace_id: string; request_digest?: string } {
  const text = entry.string();
  if (!text.startsWith('{')) {
    // An entry from before digests: the bare trace id.
    if (isTraceId(text)) return { trace_id: text };
    throw new CorruptRecordError(where);
  }
  return decodeJson(IdempotencyEntry, entry.value, where);
}
