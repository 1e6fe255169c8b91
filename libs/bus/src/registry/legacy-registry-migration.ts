/**
 * Carries registry entries written before definitions were owned by accounts into the new key layout.
 * Before, `mesh_agents` and the tool bucket (`mesh_tools`, then `mesh_plugins`) were keyed by the bare workflow id / tool name and could be
 * written only by admins and trusted callers, whose writes applied to every account: such an entry moves
 * to the shared catalogue (`shared.<name>`), so every account keeps running exactly what it ran. An admin
 * then moves a tenant's own definitions into its account (PUT with `x-account-id`, DELETE the shared one).
 *
 * An entry is legacy when its key is not of the scoped layout, or when it is (a workflow id may contain
 * dots, e.g. `shared.x`) but the definition's own id equals the whole key. The value is copied byte for
 * byte (a tool file's `source_file` stays with it); a shared entry already there is never overwritten.
 * Idempotent: run at every gateway start.
 */
import type { KV } from '@nats-io/kv';
import { collect } from '../kv-keys.js';
import { parseScopedKey, scopedKey, SHARED_CATALOGUE } from './registry-scope.js';

export interface LegacyMigrationReport {
  /** Legacy keys now in the shared catalogue. */
  moved: string[];
  /** Legacy keys dropped because the shared catalogue already held that name. */
  superseded: string[];
  /** Keys of neither layout whose value names no definition: left alone. */
  unrecognised: string[];
}

/** `idField`: the field of a definition holding its own key, `workflow_id` for agents, `name` for tools. */
export async function migrateLegacyRegistryEntries(
  kv: KV,
  idField: 'workflow_id' | 'name',
): Promise<LegacyMigrationReport> {
  const report: LegacyMigrationReport = { moved: [], superseded: [], unrecognised: [] };
  for (const key of await collect(await kv.keys())) {
    const entry = await kv.get(key);
    if (!entry || entry.operation !== 'PUT') continue;
    const id = definitionId(entry.value, idField);
    // An agent version's own key (`ver.<scoped key>.<n>`, see AgentStore) is of the new layout.
    if (id !== key && key.startsWith('ver.')) continue;
    if (id !== key) {
      if (parseScopedKey(key) === undefined) report.unrecognised.push(key);
      continue;
    }
    let target: string;
    try {
      target = scopedKey(SHARED_CATALOGUE, key);
    } catch {
      report.unrecognised.push(key);
      continue;
    }
    try {
      await kv.create(target, entry.value);
      report.moved.push(key);
    } catch {
      // `create` fails when the shared catalogue has the name already: that entry is the newer one.
      if ((await kv.get(target))?.operation !== 'PUT') throw new Error(`could not move ${key} to ${target}`);
      report.superseded.push(key);
    }
    await kv.delete(key, { previousSeq: entry.revision });
  }
  return report;
}

function definitionId(value: Uint8Array, idField: string): unknown {
  try {
    const parsed: unknown = JSON.parse(new TextDecoder().decode(value));
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>)[idField]
      : undefined;
  } catch {
    return undefined;
  }
}
