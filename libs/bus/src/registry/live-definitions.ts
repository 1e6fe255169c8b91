/**
 * Agents or tools as a task resolves them, from an in-memory mirror of the registry bucket kept live by a
 * KV watch (see ../stores/kv-mirror.ts), so a warm task reads no KV at all. Resolution is the registry's
 * own: the account's definition first, then the shared catalogue's, never another account's
 * (`lookupOrder`).
 *
 * When the mirror finds the name in no scope, each scope the mirror answered for is read once more from
 * the bucket before the name counts as unknown: a definition stored a moment before the task arrived may
 * not have reached the watch yet (the task and the watch travel on different streams). A definition
 * changed or deleted takes effect once the watch delivers the change, which on a healthy connection is
 * before any task submitted after the change was acknowledged reaches here.
 */
import { Buckets, McpServerDefinition, ToolDefinition } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import type { z } from 'zod';
import { decodeJson } from '../json.js';
import { StoredAgent } from '../stores/agent-store.js';
import { KvMirror, type ConnectionEvents, type LookupSource, type MirrorEvent } from '../stores/kv-mirror.js';
import { lookupOrder, scopedKey, type RegistryScope } from './registry-scope.js';
import type { DefinitionBucket } from './scoped-entries.js';

export interface LiveDefinitionsOptions {
  /** Definitions held in memory at most (the least recently used go first; 0: none, every lookup reads). */
  maxEntries: number;
  /** The connection the bucket is used through, so the watch is started afresh after a reconnect. */
  connection?: ConnectionEvents;
  onEvent?(event: MirrorEvent): void;
  /** Told whether each definition came from memory or from a read of the bucket. */
  onLookup?(source: LookupSource): void;
  retryDelayMs?: { min: number; max: number };
}

export class LiveDefinitions<S extends z.ZodType> {
  private constructor(private readonly mirror: KvMirror<z.infer<S>>) {}

  /** Resolves once the bucket's content is loaded, or the watch could not start (then every lookup reads). */
  static async start<S extends z.ZodType>(
    bucket: DefinitionBucket<S>,
    options: LiveDefinitionsOptions,
  ): Promise<LiveDefinitions<S>> {
    const mirror = await KvMirror.start<z.infer<S>>({
      kv: bucket.kv,
      decode: (key, data) => deepFreeze(decodeJson(bucket.schema, data, `${bucket.name}/${key}`)),
      ...options,
    });
    return new LiveDefinitions<S>(mirror);
  }

  /** What a task of `from` gets under `name`: its account's own definition, else the shared catalogue's. */
  async resolve(
    from: RegistryScope,
    name: string,
  ): Promise<{ found: z.infer<S>; scope: RegistryScope } | undefined> {
    const answeredAbsent: RegistryScope[] = [];
    for (const scope of lookupOrder(from)) {
      const key = scopedKey(scope, name);
      const known = this.mirror.lookup(key);
      if (known.state === 'present') return { found: known.value, scope };
      if (known.state === 'absent') {
        answeredAbsent.push(scope);
        continue;
      }
      const read = await this.mirror.read(key);
      if (read !== undefined) return { found: read, scope };
    }
    for (const scope of answeredAbsent) {
      const read = await this.mirror.read(scopedKey(scope, name));
      if (read !== undefined) return { found: read, scope };
    }
    return undefined;
  }

  /**
   * The definition under one exact key (an agent version's, `agentVersionKey`): from memory, else read
   * from the bucket (a version written a moment ago may not have reached the watch).
   */
  async getKey(key: string): Promise<z.infer<S> | undefined> {
    const known = this.mirror.lookup(key);
    if (known.state === 'present') return known.value;
    return this.mirror.read(key);
  }

  /** True while lookups are answered from memory. */
  isLive(): boolean {
    return this.mirror.isLive();
  }

  /** Entries held in memory. */
  size(): number {
    return this.mirror.size();
  }

  stop(): void {
    this.mirror.stop();
  }
}

/**
 * Agents (`mesh_agents`) as tasks resolve them, with their version fields (absent on an entry written
 * before versions existed: see `stampedAgent`). A pinned version is an immutable entry of the same
 * bucket (`agentVersionKey`), read through the same mirror.
 */
export function startLiveAgents(
  kv: KV,
  options: LiveDefinitionsOptions,
): Promise<LiveDefinitions<typeof StoredAgent>> {
  return LiveDefinitions.start({ kv, name: Buckets.AGENTS, schema: StoredAgent }, options);
}

/** Tools (`mesh_tools`) as tasks resolve them; a tool file's `source_file` is dropped by the parse. */
export function startLiveTools(
  kv: KV,
  options: LiveDefinitionsOptions,
): Promise<LiveDefinitions<typeof ToolDefinition>> {
  return LiveDefinitions.start({ kv, name: Buckets.TOOLS, schema: ToolDefinition }, options);
}

/** MCP server definitions (`mesh_mcp_servers`) as tasks resolve the servers their agent binds. */
export function startLiveMcpServers(
  kv: KV,
  options: LiveDefinitionsOptions,
): Promise<LiveDefinitions<typeof McpServerDefinition>> {
  return LiveDefinitions.start({ kv, name: Buckets.MCP_SERVERS, schema: McpServerDefinition }, options);
}

/** Definitions are shared by every task that resolves them: none may change one for the others. */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
