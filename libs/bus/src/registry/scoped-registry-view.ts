/**
 * One scope of a registry bucket seen as a bucket of its own, keyed by bare definition names: what the
 * assembler's tool-file sync and native-tool mirror write through, so they can only ever touch the
 * shared catalogue and never an account's definitions.
 */
import type { KV, KvEntry } from '@nats-io/kv';
import { listLatestKeys } from '../stores/latest-keys.js';
import { scopedKey, scopePrefix, type RegistryScope } from './registry-scope.js';

/** The part of a KV bucket the registry writers use, addressed by definition name. */
export interface RegistryBucket {
  keys(): Promise<AsyncIterable<string>>;
  get(name: string): Promise<KvEntry | null>;
  create(name: string, value: Uint8Array): Promise<number>;
  update(name: string, value: Uint8Array, revision: number): Promise<number>;
  delete(name: string, options?: { previousSeq?: number }): Promise<void>;
}

export function scopedRegistryView(kv: KV, scope: RegistryScope): RegistryBucket {
  const prefix = scopePrefix(scope);
  return {
    async keys() {
      const keys = await listLatestKeys(kv, `${prefix}>`);
      return (async function* names() {
        for await (const key of keys) yield key.slice(prefix.length);
      })();
    },
    get: (name) => kv.get(scopedKey(scope, name)),
    create: (name, value) => kv.create(scopedKey(scope, name), value),
    update: (name, value, revision) => kv.update(scopedKey(scope, name), value, revision),
    delete: (name, options) => kv.delete(scopedKey(scope, name), options),
  };
}
