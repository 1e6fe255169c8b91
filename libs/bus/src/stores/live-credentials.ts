/**
 * Users' credentials as the assembler resolves them for a task, from an in-memory mirror of KV
 * `mesh_credentials` kept live by a watch (see ./kv-mirror.ts), so a warm task reads no KV. The mirror holds
 * the stored envelopes, still encrypted: a value is decrypted for the task that asks and kept nowhere.
 * A name the mirror lacks is read from the bucket before it counts as missing (a credential stored a
 * moment before the task may not have reached the watch yet).
 */
import type { EncryptedSecret, MasterKey } from '@agentmesh/vault';
import type { KV } from '@nats-io/kv';
import type { CredentialKeys, ResolvedCredentials } from './credential-store.js';
import { credentialKey, decodeStoredSecret, openStoredSecret } from './credential-record.js';
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

  /** Decrypts the named credentials of a user; names without a stored value are listed as missing. */
  async resolve(accountId: string, userId: string, names: readonly string[]): Promise<ResolvedCredentials> {
    const values: Record<string, string> = {};
    const missing: string[] = [];
    for (const name of new Set(names)) {
      const key = credentialKey(accountId, userId, name);
      const known = this.mirror.lookup(key);
      const secret = known.state === 'present' ? known.value : await this.mirror.read(key);
      if (secret === undefined) missing.push(name);
      else values[name] = openStoredSecret(key, secret, this.decryptKeys);
    }
    return { values, missing };
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
