/**
 * API keys of callers in KV `mesh_api_keys`, stored as sha256 digests (a leaked bucket leaks no key),
 * each mapped to the account it acts for.
 */
import { AccountId } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { z } from 'zod';
import { decodeJson, encodeJson } from '../json.js';
import { sha256Hex } from '../kv-keys.js';

export const ApiKeyGrant = z.object({
  account_id: AccountId,
  account_type: z.string().min(1).default('user'),
  /** A label for people (which integration the key is for). */
  label: z.string().optional(),
});
export type ApiKeyGrant = z.infer<typeof ApiKeyGrant>;

export class ApiKeyStore {
  constructor(private readonly kv: KV) {}

  async put(apiKey: string, grant: z.input<typeof ApiKeyGrant>): Promise<void> {
    await this.kv.put(sha256Hex(apiKey), encodeJson(ApiKeyGrant.parse(grant)));
  }

  async lookup(apiKey: string): Promise<ApiKeyGrant | undefined> {
    const digest = sha256Hex(apiKey);
    const entry = await this.kv.get(digest);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(ApiKeyGrant, entry.value, `mesh_api_keys/${digest.slice(0, 8)}…`);
  }

  async revoke(apiKey: string): Promise<void> {
    await this.kv.delete(sha256Hex(apiKey));
  }
}
