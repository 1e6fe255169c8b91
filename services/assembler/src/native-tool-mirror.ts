/**
 * Mirrors the native tools that running executors announce (KV `mesh_native_providers`, with their
 * definitions) into the shared catalogue of the tool registry (KV `mesh_tools`), so agents can bind
 * them like any plugin (seed 002: the registry holds a copy of what the code defines). The assembler does
 * this, not the executors, because executors may not write the registry: a compromised executor could
 * otherwise rewrite any tool.
 *
 * Code is the source of truth for a native tool's entry: an entry is written when it is missing or differs
 * from the announced definition, and left untouched when equal, so announcements renewed every few seconds
 * cost one comparison. Every write is conditional on the revision read (`create`, `update` at that
 * revision); when another assembler wrote first, the entry is read again and compared again, so instances
 * converge. (Executors of different versions disagreeing on a definition keep the last one announced; a
 * rolling deploy ends with the new one.)
 *
 * A valid entry of another type under a native tool's name (an HTTP plugin someone called the same) is
 * not overwritten: it is reported, and that native tool stays out of the registry until the name is free.
 * An announcement whose tools name another class than the announcement's is refused whole.
 */
import { isDeepStrictEqual } from 'node:util';
import { encodeJson, type RegistryBucket } from '@agentmesh/bus';
import { NativeProviderAnnouncement, NativeTool, ToolDefinition } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { NativeProviderDirectory } from './native-provider-directory.js';

export interface MirrorReport {
  /** Names created or updated. */
  readonly written: string[];
  /** Names whose entry already equalled the announced definition. */
  readonly unchanged: string[];
  /** Names held by another kind of tool, left as they are. */
  readonly refused: { readonly name: string; readonly holder: string }[];
}

const MAX_WRITE_ATTEMPTS = 5;
const decoder = new TextDecoder();

type Step = 'written' | 'unchanged' | { refusedBy: string };

export async function mirrorNativeTools(
  plugins: RegistryBucket,
  tools: readonly NativeTool[],
): Promise<MirrorReport> {
  const report: MirrorReport = { written: [], unchanged: [], refused: [] };
  for (const tool of tools) {
    const step = await mirrorOne(plugins, NativeTool.parse(tool));
    if (step === 'written') report.written.push(tool.name);
    else if (step === 'unchanged') report.unchanged.push(tool.name);
    else report.refused.push({ name: tool.name, holder: step.refusedBy });
  }
  return report;
}

async function mirrorOne(plugins: RegistryBucket, tool: NativeTool): Promise<Step> {
  const payload = encodeJson(tool);
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

/** The tools an announcement entry carries, or why it is refused. */
export function announcedTools(value: Uint8Array): NativeTool[] | string {
  let parsed;
  try {
    parsed = NativeProviderAnnouncement.safeParse(JSON.parse(decoder.decode(value)));
  } catch {
    return 'not JSON';
  }
  if (!parsed.success) return 'not a native provider announcement';
  const { class_name: className, tools } = parsed.data;
  const stray = tools.find((tool) => tool.class_name !== className);
  if (stray !== undefined) return `tool ${stray.name} names class ${stray.class_name}, not ${className}`;
  return tools;
}

export interface NativeToolMirrorEvents {
  onMirrored(report: MirrorReport): void;
  onRefused(key: string, reason: string): void;
  onError(error: unknown): void;
}

/**
 * Follows `mesh_native_providers` and mirrors every announcement's tools as it arrives (the initial
 * content included). Definitions already mirrored unchanged are skipped without touching the registry.
 * `directory` says which classes are provided now (complete once `ready` resolves).
 */
export async function followNativeProviders(
  providers: KV,
  plugins: RegistryBucket,
  events: NativeToolMirrorEvents,
): Promise<{ stop(): void; ready: Promise<void>; directory: NativeProviderDirectory }> {
  const mirrored = new Map<string, NativeTool>();
  const directory = new NativeProviderDirectory((await providers.status()).ttl);
  const watch = await providers.watch();
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));
  void (async () => {
    for await (const entry of watch) {
      if (entry.operation === 'PUT') {
        const tools = announcedTools(entry.value);
        if (typeof tools === 'string') events.onRefused(entry.key, tools);
        else {
          directory.heard(entry);
          const fresh = tools.filter((tool) => !isDeepStrictEqual(mirrored.get(tool.name), tool));
          if (fresh.length > 0) {
            try {
              const report = await mirrorNativeTools(plugins, fresh);
              for (const tool of fresh)
                if (report.written.includes(tool.name) || report.unchanged.includes(tool.name))
                  mirrored.set(tool.name, tool);
              events.onMirrored(report);
            } catch (error) {
              events.onError(error);
            }
          }
        }
      } else directory.heard(entry);
      if (entry.delta === 0) markReady();
    }
  })();
  if ((await providers.status()).values === 0) markReady();
  return { stop: () => watch.stop(), ready, directory };
}
