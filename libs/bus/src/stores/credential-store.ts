/**
 * Credentials in KV `mesh_credentials`, encrypted at rest (AES-256-GCM under the master key; the record's
 * key is the additional data, so a ciphertext moved to another record does not decrypt). Each account has
 * an account-wide set, serving every user of it, and a set per user; a task's user is served from their own
 * set first, then from the account's (see ./credential-record.ts for the keys).
 * Write-only from the outside: values are returned only to the assembler sealing a task's vault.
 */
import { encryptSecret, type MasterKey } from '@agentmesh/vault';
import type { KV } from '@nats-io/kv';
import { encodeJson } from '../json.js';
import { decodeKeySegment } from '../kv-keys.js';
import { listLatestKeys } from './latest-keys.js';
import {
  accountCredentialKey,
  credentialKey,
  credentialSetPrefix,
  decodeStoredSecret,
  openStoredSecret,
  type CredentialOwner,
} from './credential-record.js';

export interface CredentialKeys {
  /** Encrypts new values. */
  current: MasterKey;
  /** Older keys still able to decrypt during a rotation. */
  previous?: readonly MasterKey[];
}

export interface ResolvedCredentials {
  values: Record<string, string>;
  /** Names found in neither the user's set nor the account's. */
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

  /** Stores a user's own credential. */
  async put(accountId: string, userId: string, name: string, value: string): Promise<void> {
    await this.write(credentialKey(accountId, userId, name), value);
  }

  /** Stores a credential for every user of the account (a user's own one of the same name wins). */
  async putAccountCredential(accountId: string, name: string, value: string): Promise<void> {
    await this.write(accountCredentialKey(accountId, name), value);
  }

  async delete(accountId: string, userId: string, name: string): Promise<boolean> {
    return this.remove(credentialKey(accountId, userId, name));
  }

  async deleteAccountCredential(accountId: string, name: string): Promise<boolean> {
    return this.remove(accountCredentialKey(accountId, name));
  }

  /** Names of the user's own credentials (never their values; the account-wide ones are not among them). */
  async listNames(accountId: string, userId: string): Promise<string[]> {
    return this.names(accountId, { userId });
  }

  /** Names of the account-wide credentials (never their values). */
  async accountCredentialNames(accountId: string): Promise<string[]> {
    return this.names(accountId, 'account');
  }

  /** The accounts holding any credential, account-wide or a user's (keys only; nothing is decrypted). */
  async accountIds(): Promise<Set<string>> {
    const accounts = new Set<string>();
    for (const key of await listLatestKeys(this.kv, '>')) {
      const account = key.slice(0, key.indexOf('.'));
      if (account) accounts.add(account);
    }
    return accounts;
  }

  /**
   * Decrypts the named credentials a user's task gets: the user's own, else the account's; names in
   * neither set are listed as missing.
   */
  async resolve(accountId: string, userId: string, names: readonly string[]): Promise<ResolvedCredentials> {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of new Set(names)) {
      const value =
        (await this.read(credentialKey(accountId, userId, name))) ??
        (await this.read(accountCredentialKey(accountId, name)));
      if (value === undefined) missing.push(name);
      else values[name] = value;
    }
    return { values, missing };
  }

  private async write(key: string, value: string): Promise<void> {
    await this.kv.put(key, encodeJson(encryptSecret(value, key, this.keys.current)));
  }

  private async remove(key: string): Promise<boolean> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return false;
    await this.kv.delete(key);
    return true;
  }

  private async read(key: string): Promise<string | undefined> {
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return openStoredSecret(key, decodeStoredSecret(key, entry.value), this.decryptKeys);
  }

  private async names(accountId: string, owner: CredentialOwner): Promise<string[]> {
    const prefix = credentialSetPrefix(accountId, owner);
    const keys = await listLatestKeys(this.kv, `${prefix}.*`);
    const names: string[] = [];
    for (const key of keys) {
      const entry = await this.kv.get(key);
      if (entry?.operation === 'PUT') names.push(decodeKeySegment(key.slice(prefix.length + 1)));
    }
    return names.sort();
  }
}
