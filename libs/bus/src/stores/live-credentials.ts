/**
 * Credentials as the assembler resolves them for a task — the user's own, else the account's — from an
 * in-memory mirror of KV `mesh_credentials` kept live by a watch (see ./kv-mirror.ts), so a warm task reads
 * no KV. The mirror holds the stored envelopes, still encrypted: a value is decrypted for the task that asks
 * and kept nowhere. A name the mirror lacks in both sets is read from the bucket before it counts as
 * missing (a credential stored a moment before the task may not have reached the watch yet). When the
 * mirror knows the user has none and holds the account's, the account's is used without a read: a user's
 * own credential stored a moment before may then serve only the next task.
 */
import type { EncryptedSecret, MasterKey } from '@agentmesh/vault';
import type { KV } from '@nats-io/kv';
import type { CredentialKeys, ResolvedCredentials } from './credential-store.js';
import {
  accountCredentialKey,
  credentialKey,
  decodeStoredSecret,
  openStoredSecret,
} from './credential-record.js';
import { KvMirror, type ConnectionEvents, type LookupSource, type MirrorEvent } from './kv-mirror.js';

export interface LiveCredentialsOptions {
  kv: KV;
  keys: CredentialKeys;
  /** Stored credentials held in memory at most (the least recently used go first; 0: every lookup reads). */
  maxEntries: number;
  /** The connection the bucket is used through, so the watch is started afresh after a reconnect. */
  connection?: ConnectionEvents;
  onEvent?(event: MirrorEvent): void;
  /** Told whether each credential came from memory or from a read of the bucket. */
  onLookup?(source: LookupSource): void;
  retryDelayMs?: { min: number; max: number };
}

export class LiveCredentials {
  private readonly decryptKeys: readonly MasterKey[];

  private constructor(
    private readonly mirror: KvMirror<EncryptedSecret>,
    keys: CredentialKeys,
  ) {
    this.decryptKeys = [keys.current, ...(keys.previous ?? [])];
  }

  static async start(options: LiveCredentialsOptions): Promise<LiveCredentials> {
    const { keys, ...mirrorOptions } = options;
    const mirror = await KvMirror.start<EncryptedSecret>({ ...mirrorOptions, decode: decodeStoredSecret });
    return new LiveCredentials(mirror, keys);
  }

  /**
   * Decrypts the named credentials a user's task gets: the user's own, else the account's; names in
   * neither set are listed as missing.
   */
  async resolve(accountId: string, userId: string, names: readonly string[]): Promise<ResolvedCredentials> {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of new Set(names)) {
      const value = await this.resolveOne(accountId, userId, name);
      if (value === undefined) missing.push(name);
      else values[name] = value;
    }
    return { values, missing };
  }

  private async resolveOne(accountId: string, userId: string, name: string): Promise<string | undefined> {
    const userKey = credentialKey(accountId, userId, name);
    const accountKey = accountCredentialKey(accountId, name);
    const user = this.mirror.lookup(userKey);
    if (user.state === 'present') return this.open(userKey, user.value);
    const account = this.mirror.lookup(accountKey);
    if (user.state === 'absent' && account.state === 'present') return this.open(accountKey, account.value);
    const own = await this.mirror.read(userKey);
    if (own !== undefined) return this.open(userKey, own);
    const shared = account.state === 'present' ? account.value : await this.mirror.read(accountKey);
    return shared === undefined ? undefined : this.open(accountKey, shared);
  }

  private open(key: string, secret: EncryptedSecret): string {
    return openStoredSecret(key, secret, this.decryptKeys);
  }

  /** True while lookups are answered from memory. */
  isLive(): boolean {
    return this.mirror.isLive();
  }

  size(): number {
    return this.mirror.size();
  }

  stop(): void {
    this.mirror.stop();
  }
}
