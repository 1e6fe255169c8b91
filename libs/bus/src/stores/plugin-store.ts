/**
 * Tool definitions (canonical form) in KV `mesh_plugins`, keyed by function name, and a live in-memory
 * catalogue of them kept current by a KV watch, so a tool added through the management API (or a
 * file) is usable by the next task without a restart.
 *
 * An entry written from an assembler's tools directory carries the file's path in
 * {@link TOOL_SOURCE_FILE_FIELD} beside the definition; parsing drops it, so readers see only the tool.
 */
import { ToolDefinition } from '@agentmesh/protocol';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import { decodeJson, encodeJson } from '../json.js';
import { collect } from '../kv-keys.js';

/** The field of a stored entry naming the tools-directory file it was written from. */
export const TOOL_SOURCE_FILE_FIELD = 'source_file';

export class PluginStore {
  constructor(private readonly kv: KV) {}

  async get(name: string): Promise<ToolDefinition | undefined> {
    const entry = await this.kv.get(name);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(ToolDefinition, entry.value, `mesh_plugins/${name}`);
  }

  /** The tools-directory file that owns this tool, if a file does. */
  async sourceFile(name: string): Promise<string | undefined> {
    const entry = await this.kv.get(name);
    if (!entry || entry.operation !== 'PUT') return undefined;
    try {
      return toolSourceFile(entry.json<unknown>());
    } catch {
      return undefined;
    }
  }

  async put(tool: ToolDefinition): Promise<ToolDefinition> {
    const parsed = ToolDefinition.parse(tool);
    await this.kv.put(parsed.name, encodeJson(parsed));
    return parsed;
  }

  async delete(name: string): Promise<boolean> {
    const existed = (await this.get(name)) !== undefined;
    if (existed) await this.kv.delete(name);
    return existed;
  }

  async list(): Promise<ToolDefinition[]> {
    const keys = await collect(await this.kv.keys());
    const tools = await Promise.all(keys.sort().map((key) => this.get(key)));
    return tools.filter((tool): tool is ToolDefinition => tool !== undefined);
  }

  /**
   * Starts a live catalogue: resolves once the bucket's current content is loaded, then follows
   * every change. `onInvalid` hears about entries that do not parse (they are skipped).
   */
  async catalogue(onInvalid?: (key: string, error: unknown) => void): Promise<PluginCatalogue> {
    const tools = new Map<string, ToolDefinition>();
    const watch = await this.kv.watch();
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const apply = (entry: KvWatchEntry): void => {
      if (entry.operation !== 'PUT') {
        tools.delete(entry.key);
        return;
      }
      try {
        tools.set(entry.key, decodeJson(ToolDefinition, entry.value, `mesh_plugins/${entry.key}`));
      } catch (error) {
        tools.delete(entry.key);
        onInvalid?.(entry.key, error);
      }
    };
    void (async () => {
      for await (const entry of watch) {
        apply(entry);
        if (entry.delta === 0) markReady();
      }
    })();
    // The initial pass ends with the entry whose `delta` (messages still pending) is 0; an empty
    // bucket sends no entry at all.
    if ((await this.kv.status()).values === 0) markReady();
    await ready;
    return {
      get: (name) => tools.get(name),
      list: () => [...tools.values()],
      stop: () => watch.stop(),
    };
  }
}

export interface PluginCatalogue {
  get(name: string): ToolDefinition | undefined;
  list(): ToolDefinition[];
  stop(): void;
}

/** The file named in a stored registry entry (its parsed JSON), if a file owns it. */
export function toolSourceFile(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const field = (value as Record<string, unknown>)[TOOL_SOURCE_FILE_FIELD];
  return typeof field === 'string' ? field : undefined;
}
