/**
 * Reading a registry bucket's scoped definitions (`mesh_agents`, `mesh_tools`), the same for agents and
 * tools: one entry parsed with its schema, every entry of one scope, and an account's lookup order.
 */
import type { KV } from '@nats-io/kv';
import type { z } from 'zod';
import { decodeJson } from '../json.js';
import { listLatestKeys } from '../stores/latest-keys.js';
import {
  ACCOUNT_KEYS_PREFIX,
  lookupOrder,
  parseScopedKey,
  scopePrefix,
  type RegistryScope,
} from './registry-scope.js';

/** A registry bucket with the schema of what it holds and its name (for errors naming a bad entry). */
export interface DefinitionBucket<S extends z.ZodType> {
  kv: KV;
  name: string;
  schema: S;
}

/** The definition stored under `key`, parsed; undefined when there is none (or it was deleted). */
export async function readScopedEntry<S extends z.ZodType>(
  bucket: DefinitionBucket<S>,
  key: string,
): Promise<z.infer<S> | undefined> {
  const entry = await bucket.kv.get(key);
  if (!entry || entry.operation !== 'PUT') return undefined;
  return decodeJson(bucket.schema, entry.value, `${bucket.name}/${key}`);
}

/** Every definition of one scope, in key order. */
export async function listScope<S extends z.ZodType>(
  bucket: DefinitionBucket<S>,
  scope: RegistryScope,
): Promise<z.infer<S>[]> {
  const keys = await listLatestKeys(bucket.kv, `${scopePrefix(scope)}>`);
  const definitions = await Promise.all(keys.sort().map((key) => readScopedEntry(bucket, key)));
  return definitions.filter((definition) => definition !== undefined);
}

/** The accounts holding definitions of their own in the bucket (keys only; no definition is read). */
export async function accountsWithEntries(kv: KV): Promise<Set<string>> {
  const accounts = new Set<string>();
  for (const key of await listLatestKeys(kv, `${ACCOUNT_KEYS_PREFIX}>`)) {
    const scope = parseScopedKey(key)?.scope;
    if (scope?.kind === 'account') accounts.add(scope.accountId);
  }
  return accounts;
}

/** The first scope of `from`'s lookup order (its own, then shared) where `find` finds something. */
export async function resolveInLookupOrder<T>(
  from: RegistryScope,
  find: (scope: RegistryScope) => Promise<T | undefined>,
): Promise<{ found: T; scope: RegistryScope } | undefined> {
  for (const scope of lookupOrder(from)) {
    const found = await find(scope);
    if (found !== undefined) return { found, scope };
  }
  return undefined;
}

/**
 * Every definition `from` sees, each with the scope it comes from: its own, then the shared ones it does
 * not shadow (a name of its own hides the shared one, as lookups do).
 */
export async function listInLookupOrder<S extends z.ZodType>(
  bucket: DefinitionBucket<S>,
  from: RegistryScope,
  nameOf: (definition: z.infer<S>) => string,
): Promise<{ found: z.infer<S>; scope: RegistryScope }[]> {
  const seen = new Set<string>();
  const visible: { found: z.infer<S>; scope: RegistryScope }[] = [];
  for (const scope of lookupOrder(from)) {
    for (const found of await listScope(bucket, scope)) {
      if (seen.has(nameOf(found))) continue;
      seen.add(nameOf(found));
      visible.push({ found, scope });
    }
  }
  return visible;
}
