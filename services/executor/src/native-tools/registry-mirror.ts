/**
 * Mirrors the executor's native tools into the tool registry (KV `mesh_plugins`), so agents can bind
 * them like any plugin (seed 002: the registry holds a copy of what the code defines).
 *
 * Code is the source of truth for a native tool's entry: an entry is written when it is missing or differs
 * from the code's definition, and left untouched when equal, so executors starting together do not rewrite
 * it over and over. Every write is conditional on the revision read (`create`, `update` at that revision);
 * when another executor wrote first, the entry is read again and compared again, so instances converge.
 * (Executors of different versions disagreeing on a definition keep the last one written; a rolling
 * deploy ends with the new one.)
 *
 * A valid entry of another type under a native tool's name (an HTTP plugin someone called the same) is
 * not overwritten: it is reported, and that native tool stays out of the registry until the name is free.
 */
import { isDeepStrictEqual } from 'node:util';
import { NativeTool, ToolDefinition } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';

export interface MirrorReport {
  /** Names created or updated by this executor. */
  readonly written: string[];
  /** Names whose entry already equalled the code's definition. */
  readonly unchanged: string[];
  /** Names held by another kind of tool, left as they are. */
  readonly refused: { readonly name: string; readonly holder: string }[];
}

const MAX_WRITE_ATTEMPTS = 5;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

type Step = 'written' | 'unchanged' | { refusedBy: string };

export async function mirrorNativeTools(plugins: KV, tools: readonly NativeTool[]): Promise<MirrorReport> {
  const report: MirrorReport = { written: [], unchanged: [], refused: [] };
  for (const tool of tools) {
    const step = await mirrorOne(plugins, NativeTool.parse(tool));
    if (step === 'written') report.written.push(tool.name);
    else if (step === 'unchanged') report.unchanged.push(tool.name);
    else report.refused.push({ name: tool.name, holder: step.refusedBy });
  }
  return report;
}

async function mirrorOne(plugins: KV, tool: NativeTool): Promise<Step> {
  const payload = encoder.encode(JSON.stringify(tool));
  let lastError: unknown;
  for (let attempt = 0; attempt < MAX_WRITE_ATTEMPTS; attempt++) {
    const entry = await plugins.get(tool.name);
    const current = entry?.operation === 'PUT' ? readTool(entry.value) : undefined;
    if (current !== undefined && current.type !== 'NATIVE') return { refusedBy: `a ${current.type} tool` };
    if (current !== undefined && isDeepStrictEqual(current, tool)) return 'unchanged';
    try {
      if (entry === null) await plugins.create(tool.name, payload);
      else await plugins.update(tool.name, payload, entry.revision);
      return 'written';
    } catch (error) {
      // Another writer got there first: read again and decide again.
      lastError = error;
    }
  }
  throw new Error(`the registry entry ${tool.name} kept changing under ${MAX_WRITE_ATTEMPTS} writes`, {
    cause: lastError,
  });
}

/** The stored tool, or undefined when the entry does not parse (a broken entry is repaired by the write). */
function readTool(value: Uint8Array): ToolDefinition | undefined {
  try {
    const parsed = ToolDefinition.safeParse(JSON.parse(decoder.decode(value)));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
