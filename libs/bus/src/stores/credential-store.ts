/**
 * Users' credentials in KV `mesh_credentials`, encrypted at rest (AES-256-GCM under the master key;
 * the record's key is the additional data, so a ciphertext moved to another record does not decrypt).
 * Write-only from the outside: values are returned only to the assembler sealing a task's vault.
 * Key: `<account>.<user>.<name>` with user and name base64url-encoded.
 */
import { encryptSecret, type MasterKey } from '@agentmesh/vault';
import type { KV } from '@nats-io/kv';
import { encodeJson } from '../json.js';
import { decodeKeySegment, encodeKeySegment } from '../kv-keys.js';
import { listLatestKeys } from './latest-keys.js';
import { credentialKey, decodeStoredSecret, openStoredSecret } from './credential-record.js';

export interface CredentialKeys {
  /** Encrypts new values. */
  current: MasterKey;
  /** Older keys still able to decrypt during a rotation. */
  previous?: readonly MasterKey[];
}

export interface ResolvedCredentials {
  values: Record<string, string>;
  missing: string[];
}

export class CredentialStore {
  private readonly decryptKeys: readonly MasterKey[];

  constructor(
    private readonly kv: KV,
    private readonly keys: CredentialKeys,
  ) {
    this.decryptKeys = [keys.current, ...(keys.previous ?? [])];
  }

  private prefix(accountId: string, userId: string): string {
    return `${accountId}.${encodeKeySegment(userId)}`;
  }

  async put(accountId: string, userId: string, name: string, value: string): Promise<void> {
    const key = credentialKey(accountId, userId, name);
    await this.kv.put(key, encodeJson(encryptSecret(value, key, this.keys.current)));
  }

  async delete(accountId: string, userId: string, name: string): Promise<boolean> {
    const key = credentialKey(accountId, userId, name);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return false;
    await this.kv.delete(key);
    return true;
  }

  /** Names of the user's credentials (never their values). */
  async listNames(accountId: string, userId: string): Promise<string[]> {
    const prefix = this.prefix(accountId, userId);
    const keys = await listLatestKeys(this.kv, `${prefix}.*`);
    const names: string[] = [];
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry?.operation === 'PUT') names.push(decodeKeySegment(key.slice(prefix.length + 1)));
    }
    return names.sort();
  }

  /** Decrypts the named credentials of a user; names without a stored value are listed as missing. */
  async resolve(accountId: string, userId: string, names: readonly string[]): Promise<ResolvedCredentials> {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of new Set(names)) {
      const key = credentialKey(accountId, userId, name);
      const entry = await this.kv.get(key);
      if (!entry || entry.operation !== 'PUT') {
        missing.push(name);
        continue;
      }
      values[name] = openStoredSecret(key, decodeStoredSecret(key, entry.value), this.decryptKeys);
    }
    return { values, missing };
  }
}
