/**
 * Keeps the shared catalogue of the tool registry (KV `mesh_tools`, seen through a view of its shared
 * scope, keyed by canonical tool name) in step with a directory of tool files: the operator's files are
 * shared by every account, and can never touch an account's own tools. once at start-up and again after every change the directory watcher notices. Each run
 * compares the whole directory with the registry, so it does not matter which file changed or how many
 * change events were coalesced or lost.
 *
 * Ownership: an entry written from a file carries the file's path in a `source_file` field beside the
 * canonical definition. `ToolDefinition` does not know that field, so every reader (the live catalogue,
 * the management API, assembled tasks) drops it, and every write through the management API (which
 * parses) stores the entry without it: from then on the entry belongs to the API.
 *
 * Rules, per tool name:
 * 1. Files never overwrite the API: an entry without `source_file` is left alone (`kept`).
 * 2. Between files defining the same name, the lexicographically first path (relative to the directory,
 *    `/`-separated) wins; the others are reported as `shadowed`.
 * 3. A name the registry does not hold is created from its winning file (`added`); a file-owned entry that
 *    differs from its winning file (content, or which file it is) is replaced by it (`updated`).
 * 4. A file-owned entry whose name no valid file defines any more is deleted (`removed`) when its file is
 *    gone or now defines another name. While its file is there but invalid (say, half saved), the last
 *    good version stays (`retained`); the file is reported with the rejected ones.
 * 5. When the directory cannot be listed at all, nothing changes (`listed: false`).
 * A file tool is removed by removing its file; the management API refuses to delete it (409) because the
 * next run would add it back.
 *
 * Concurrency: every write is conditional on the revision this run read (`create`, `update` at that
 * revision, `delete` with `previousSeq`). When another writer got there first (another assembler watching
 * the same directory, or the management API) the entry is read again and the rules decide again, so
 * instances reading the same directory converge on the same content and never overwrite an API write.
 */
import { isDeepStrictEqual } from 'node:util';
import { encodeJson, TOOL_SOURCE_FILE_FIELD, toolSourceFile, type RegistryBucket } from '@agentmesh/bus';
import type { DetectedToolFormat } from '@agentmesh/protocol';
import type { KvEntry } from '@nats-io/kv';
import { readToolFiles, type RejectedToolFile, type ToolFile } from './tool-files.js';

/** Writes of one name that lose to other writers this many times in a row are left to the next run. */
const MAX_WRITE_ATTEMPTS = 5;

export interface ToolFileSyncReport {
  /** False when the directory could not be listed; the registry was not touched. */
  listed: boolean;
  added: { path: string; name: string; format: DetectedToolFormat }[];
  updated: { path: string; name: string; format: DetectedToolFormat }[];
  /** `path` is the file the deleted entry had come from. */
  removed: { path: string; name: string }[];
  unchanged: { path: string; name: string }[];
  /** The registry entry is managed through the API; the file was not applied. */
  kept: { path: string; name: string }[];
  /** The entry's file is invalid now; its last good version stays in the registry. */
  retained: { path: string; name: string }[];
  /** Another file with a lexicographically smaller path defines the same name. */
  shadowed: { path: string; name: string; winner: string }[];
  rejected: RejectedToolFile[];
  /** Names other writers kept changing during this run; the next run decides them again. */
  contended: string[];
}

interface RegistryEntry {
  revision: number;
  /** The stored JSON; undefined when the entry is not JSON (then it is not ours to touch). */
  value: unknown;
  sourceFile: string | undefined;
}

type Step =
  | { kind: 'create'; file: ToolFile; value: unknown }
  | { kind: 'update'; file: ToolFile; value: unknown; revision: number }
  | { kind: 'delete'; path: string; revision: number }
  | { kind: 'none'; outcome?: 'unchanged' | 'kept' | 'retained'; path?: string };

export async function syncToolFiles(plugins: RegistryBucket, dir: string): Promise<ToolFileSyncReport> {
  const scan = await readToolFiles(dir);
  const report: ToolFileSyncReport = {
    listed: scan.listed,
    added: [],
    updated: [],
    removed: [],
    unchanged: [],
    kept: [],
    retained: [],
    shadowed: [],
    rejected: scan.rejected,
    contended: [],
  };
  if (!scan.listed) return report;

  const winners = new Map<string, ToolFile>();
  for (const file of scan.tools) {
    const winner = winners.get(file.tool.name);
    if (winner) report.shadowed.push({ path: file.path, name: file.tool.name, winner: winner.path });
    else winners.set(file.tool.name, file);
  }
  const rejectedPaths = new Set(scan.rejected.map(({ path }) => path));
  const entries = await readRegistry(plugins);
  const orphans = [...entries]
    .filter(([name, entry]) => entry.sourceFile !== undefined && !winners.has(name))
    .map(([name]) => name)
    .sort();

  const decide = (name: string, entry: RegistryEntry | undefined): Step =>
    decideStep(entry, winners.get(name), rejectedPaths);
  for (const name of [...winners.keys(), ...orphans]) {
    await applyWithRetry(plugins, name, entries.get(name), decide, report);
  }
  return report;
}

function decideStep(
  entry: RegistryEntry | undefined,
  winner: ToolFile | undefined,
  rejectedPaths: ReadonlySet<string>,
): Step {
  if (winner) {
    const value = storedForm(winner);
    if (!entry) return { kind: 'create', file: winner, value };
    if (entry.sourceFile === undefined) return { kind: 'none', outcome: 'kept', path: winner.path };
    if (isDeepStrictEqual(entry.value, value))
      return { kind: 'none', outcome: 'unchanged', path: winner.path };
    return { kind: 'update', file: winner, value, revision: entry.revision };
  }
  if (!entry || entry.sourceFile === undefined) return { kind: 'none' };
  if (rejectedPaths.has(entry.sourceFile)) {
    return { kind: 'none', outcome: 'retained', path: entry.sourceFile };
  }
  return { kind: 'delete', path: entry.sourceFile, revision: entry.revision };
}

/** The entry as stored: the canonical tool plus its file, as plain JSON (so it compares with a read). */
function storedForm(file: ToolFile): unknown {
  return JSON.parse(JSON.stringify({ ...file.tool, [TOOL_SOURCE_FILE_FIELD]: file.path })) as unknown;
}

async function applyWithRetry(
  plugins: RegistryBucket,
  name: string,
  initial: RegistryEntry | undefined,
  decide: (name: string, entry: RegistryEntry | undefined) => Step,
  report: ToolFileSyncReport,
): Promise<void> {
  let entry = initial;
  for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
    const step = decide(name, entry);
    try {
      await perform(plugins, name, step);
    } catch (error) {
      // A conditional write fails when someone else wrote first; anything else is a real failure.
      const current = await readEntry(plugins, name);
      if (current?.revision === entry?.revision) throw error;
      entry = current;
      continue;
    }
    record(report, name, step);
    return;
  }
  report.contended.push(name);
}

async function perform(plugins: RegistryBucket, name: string, step: Step): Promise<void> {
  switch (step.kind) {
    case 'create':
      await plugins.create(name, encodeJson(step.value));
      return;
    case 'update':
      await plugins.update(name, encodeJson(step.value), step.revision);
      return;
    case 'delete':
      await plugins.delete(name, { previousSeq: step.revision });
      return;
    case 'none':
      return;
  }
}

function record(report: ToolFileSyncReport, name: string, step: Step): void {
  switch (step.kind) {
    case 'create':
      report.added.push({ path: step.file.path, name, format: step.file.format });
      return;
    case 'update':
      report.updated.push({ path: step.file.path, name, format: step.file.format });
      return;
    case 'delete':
      report.removed.push({ path: step.path, name });
      return;
    case 'none':
      if (step.outcome !== undefined && step.path !== undefined) {
        report[step.outcome].push({ path: step.path, name });
      }
      return;
  }
}

async function readRegistry(plugins: RegistryBucket): Promise<Map<string, RegistryEntry>> {
  const entries = new Map<string, RegistryEntry>();
  for await (const name of await plugins.keys()) {
    const entry = await readEntry(plugins, name);
    if (entry) entries.set(name, entry);
  }
  return entries;
}

async function readEntry(plugins: RegistryBucket, name: string): Promise<RegistryEntry | undefined> {
  const entry = await plugins.get(name);
  return entry?.operation === 'PUT' ? describeEntry(entry) : undefined;
}

function describeEntry(entry: KvEntry): RegistryEntry {
  let value: unknown;
  try {
    value = entry.json<unknown>();
  } catch {
    return { revision: entry.revision, value: undefined, sourceFile: undefined };
  }
  return { revision: entry.revision, value, sourceFile: toolSourceFile(value) };
}
