/**
 * Tool definitions (canonical form) in KV `mesh_tools` (`mesh_plugins` before: see
 * ../registry/legacy-tool-bucket.ts), each owned by one account or by the shared
 * catalogue (see ../registry/registry-scope.ts), and a live in-memory catalogue of them kept current by a
 * KV watch, so a tool added through the management API (or a file) is usable by the next task without a
 * restart. An account's runs resolve a tool name in the account first, then in the shared catalogue.
 *
 * An entry written from an assembler's tools directory carries the file's path in
 * {@link TOOL_SOURCE_FILE_FIELD} beside the definition; parsing drops it, so readers see only the tool.
 */
import { Buckets, ToolDefinition, ToolType } from '@agentmesh/protocol';
import type { KV, KvWatchEntry } from '@nats-io/kv';
import { AgentToolNotStorableError } from '../errors.js';
import { decodeJson, encodeJson } from '../json.js';
import { lookupOrder, parseScopedKey, scopedKey, type RegistryScope } from '../registry/registry-scope.js';
import {
  accountsWithEntries,
  listInLookupOrder,
  listScope,
  readScopedEntry,
  resolveInLookupOrder,
  type DefinitionBucket,
} from '../registry/scoped-entries.js';

/** The field of a stored entry naming the tools-directory file it was written from. */
export const TOOL_SOURCE_FILE_FIELD = 'source_file';

/** A tool and where it was found. */
export interface ScopedTool {
  tool: ToolDefinition;
  scope: RegistryScope;
}

export class ToolStore {
  private readonly bucket: DefinitionBucket<typeof ToolDefinition>;

  constructor(private readonly kv: KV) {
    this.bucket = { kv, name: Buckets.TOOLS, schema: ToolDefinition };
  }

  async get(scope: RegistryScope, name: string): Promise<ToolDefinition | undefined> {
    return readScopedEntry(this.bucket, scopedKey(scope, name));
  }

  /** The tool a task or caller of `from` gets under `name`: an account's own, else the shared catalogue's. */
  async resolve(from: RegistryScope, name: string): Promise<ScopedTool | undefined> {
    const resolved = await resolveInLookupOrder(from, (scope) => this.get(scope, name));
    return resolved && { tool: resolved.found, scope: resolved.scope };
  }

  /** Every tool `from` sees: its own, then the shared ones it does not shadow. */
  async listVisible(from: RegistryScope): Promise<ScopedTool[]> {
    const visible = await listInLookupOrder(this.bucket, from, (tool) => tool.name);
    return visible.map(({ found, scope }) => ({ tool: found, scope }));
  }

  /** The tools-directory file that owns this tool, if a file does. */
  async sourceFile(scope: RegistryScope, name: string): Promise<string | undefined> {
    const entry = await this.kv.get(scopedKey(scope, name));
    if (!entry || entry.operation !== 'PUT') return undefined;
    try {
      return toolSourceFile(entry.json<unknown>());
    } catch {
      return undefined;
    }
  }

  /** Stores a tool; an AGENT tool is refused ({@link AgentToolNotStorableError}): agents make those. */
  async put(scope: RegistryScope, tool: ToolDefinition): Promise<ToolDefinition> {
    const parsed = ToolDefinition.parse(tool);
    if (parsed.type === ToolType.AGENT) throw new AgentToolNotStorableError(parsed.name);
    await this.kv.put(scopedKey(scope, parsed.name), encodeJson(parsed));
    return parsed;
  }

  async delete(scope: RegistryScope, name: string): Promise<boolean> {
    const existed = (await this.get(scope, name)) !== undefined;
    if (existed) await this.kv.delete(scopedKey(scope, name));
    return existed;
  }

  /** This store with one scope fixed: tools addressed by bare name (an account's, or the shared catalogue). */
  scoped(scope: RegistryScope): ScopedPluginStore {
    return {
      get: (name) => this.get(scope, name),
      list: () => this.list(scope),
      put: (tool) => this.put(scope, tool),
      delete: (name) => this.delete(scope, name),
    };
  }

  /** The tools of one scope, by name. */
  /** The accounts that have tools of their own. */
  async accountIds(): Promise<Set<string>> {
    return accountsWithEntries(this.kv);
  }

  async list(scope: RegistryScope): Promise<ToolDefinition[]> {
    return listScope(this.bucket, scope);
  }

  /**
   * Starts a live catalogue of every scope: resolves once the bucket's current content is loaded, then
   * follows every change. `onInvalid` hears about entries that do not parse (they are skipped); keys of
   * neither layout (legacy entries not yet migrated) are ignored.
   */
  async catalogue(onInvalid?: (key: string, error: unknown) => void): Promise<PluginCatalogue> {
    const tools = new Map<string, ToolDefinition>();
    const watch = await this.kv.watch();
    let markReady!: () => void;
    const ready = new Promise<void>((resolve) => (markReady = resolve));
    const apply = (entry: KvWatchEntry): void => {
      if (entry.operation !== 'PUT' || parseScopedKey(entry.key) === undefined) {
        tools.delete(entry.key);
        return;
      }
      try {
        tools.set(entry.key, decodeJson(ToolDefinition, entry.value, `mesh_tools/${entry.key}`));
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
    const get = (scope: RegistryScope, name: string): ToolDefinition | undefined =>
      tools.get(scopedKey(scope, name));
    return {
      get,
      resolve(from, name) {
        for (const scope of lookupOrder(from)) {
          const tool = get(scope, name);
          if (tool !== undefined) return { tool, scope };
        }
        return undefined;
      },
      size: () => tools.size,
      stop: () => watch.stop(),
    };
  }
}

export interface ScopedPluginStore {
  get(name: string): Promise<ToolDefinition | undefined>;
  list(): Promise<ToolDefinition[]>;
  put(tool: ToolDefinition): Promise<ToolDefinition>;
  delete(name: string): Promise<boolean>;
}

export interface PluginCatalogue {
  get(scope: RegistryScope, name: string): ToolDefinition | undefined;
  /** What a task of `from` gets under `name`: an account's own tool, else the shared catalogue's. */
  resolve(from: RegistryScope, name: string): ScopedTool | undefined;
  /** Tools of every scope. */
  size(): number;
  stop(): void;
}

/** The file named in a stored registry entry (its parsed JSON), if a file owns it. */
export function toolSourceFile(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const field = (value as Record<string, unknown>)[TOOL_SOURCE_FILE_FIELD];
  return typeof field === 'string' ? field : undefined;
}
