/**
 * The tool registry's bucket was first called `mesh_plugins`; it is `mesh_tools` now. Where a deployment
 * still has the old bucket, its entries are copied into the new one, each only when the new bucket has no
 * entry under that key (so nothing written since is overwritten), byte for byte. The old bucket is left
 * as it was: nobody may delete a bucket but an operator, who drops it once the copy is done. Idempotent:
 * run at every gateway start, before the registry's key migration.
 */
import { LegacyBuckets } from '@agentmesh/protocol';
import { Kvm, type KV } from '@nats-io/kv';
import { JetStreamApiCodes, type JetStreamClient } from '@nats-io/jetstream';
import { collect } from '../kv-keys.js';
import { isJetStreamApiError } from '../jetstream-api-error.js';

export interface LegacyToolBucketReport {
  /** Whether the old bucket exists. */
  found: boolean;
  /** Keys copied into the tool bucket. */
  copied: string[];
  /** Keys the tool bucket already had: left as they are there. */
  kept: string[];
}

export async function copyLegacyToolBucket(js: JetStreamClient, tools: KV): Promise<LegacyToolBucketReport> {
  const report: LegacyToolBucketReport = { found: false, copied: [], kept: [] };
  const legacy = await new Kvm(js).open(LegacyBuckets.PLUGINS);
  try {
    await legacy.status();
  } catch (error) {
    // The old bucket was never created here.
    if (isJetStreamApiError(error, JetStreamApiCodes.StreamNotFound)) return report;
    throw error;
  }
  report.found = true;
  for (const key of await collect(await legacy.keys())) {
    const entry = await legacy.get(key);
    if (!entry || entry.operation !== 'PUT') continue;
    const current = await tools.get(key);
    if (current?.operation === 'PUT') {
      report.kept.push(key);
      continue;
    }
    await tools.create(key, entry.value);
    report.copied.push(key);
  }
  return report;
}
