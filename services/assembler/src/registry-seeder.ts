/**
 * Seeds the tool registry (KV `mesh_plugins`, keyed by canonical tool name) from a directory of tool files
 * at start-up.
 *
 * Conflict rule, in this order:
 * 1. The registry wins over files: a name that already has an entry (written through the management API,
 *    or seeded by an earlier start) is left untouched. Files only add tools; to change a seeded tool, use
 *    the management API. The entry is created atomically, so assemblers starting together cannot
 *    overwrite each other or an API write made meanwhile.
 * 2. Between files defining the same name, the lexicographically first path (relative to the directory,
 *    `/`-separated) wins; the others are reported as shadowed.
 * Invalid files are reported with their reason and skipped; they never stop the service.
 */
import { encodeJson } from '@agentmesh/bus';
import type { DetectedToolFormat } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { readToolFiles, type RejectedToolFile, type ToolFile } from './tool-files.js';

export interface SeedReport {
  /** Stored in the registry by this seeding. */
  added: { path: string; name: string; format: DetectedToolFormat }[];
  /** The registry already had the name; the file was not applied. */
  kept: { path: string; name: string }[];
  /** Another file with a lexicographically smaller path defines the same name. */
  shadowed: { path: string; name: string; winner: string }[];
  rejected: RejectedToolFile[];
}

export async function seedRegistry(plugins: KV, dir: string): Promise<SeedReport> {
  const scan = await readToolFiles(dir);
  const report: SeedReport = { added: [], kept: [], shadowed: [], rejected: scan.rejected };
  const winners = new Map<string, ToolFile>();
  for (const file of scan.tools) {
    const winner = winners.get(file.tool.name);
    if (winner) report.shadowed.push({ path: file.path, name: file.tool.name, winner: winner.path });
    else winners.set(file.tool.name, file);
  }
  for (const file of winners.values()) {
    if (await createIfAbsent(plugins, file)) {
      report.added.push({ path: file.path, name: file.tool.name, format: file.format });
    } else {
      report.kept.push({ path: file.path, name: file.tool.name });
    }
  }
  return report;
}

/** True when the entry was created; false when the registry already holds the name. */
async function createIfAbsent(plugins: KV, file: ToolFile): Promise<boolean> {
  try {
    await plugins.create(file.tool.name, encodeJson(file.tool));
    return true;
  } catch (error) {
    const existing = await plugins.get(file.tool.name);
    if (existing?.operation === 'PUT') return false;
    throw error;
  }
}
