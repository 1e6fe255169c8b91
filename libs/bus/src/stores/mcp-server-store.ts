/**
 * MCP server definitions (name → transport, vault-named auth, tool filter, prefix) in KV `mesh_mcp_servers`,
 * each owned by one account or by the shared catalogue like agents and tools (../registry/registry-scope.ts).
 * A run resolves a server its agent binds in its own account first, then in the shared catalogue.
 */
import { Buckets, McpServerDefinition, type McpServerDefinitionInput } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { encodeJson } from '../json.js';
import { scopedKey, type RegistryScope } from '../registry/registry-scope.js';
import {
  listInLookupOrder,
  listScope,
  readScopedEntry,
  resolveInLookupOrder,
  type DefinitionBucket,
} from '../registry/scoped-entries.js';

/** A server definition and where it was found. */
export interface ScopedMcpServer {
  server: McpServerDefinition;
  scope: RegistryScope;
}

export class McpServerStore {
  private readonly bucket: DefinitionBucket<typeof McpServerDefinition>;

  constructor(private readonly kv: KV) {
    this.bucket = { kv, name: Buckets.MCP_SERVERS, schema: McpServerDefinition };
  }

  async get(scope: RegistryScope, name: string): Promise<McpServerDefinition | undefined> {
    return readScopedEntry(this.bucket, scopedKey(scope, name));
  }

  /** The server a task or caller of `from` gets under `name`: the account's own, else the shared one. */
  async resolve(from: RegistryScope, name: string): Promise<ScopedMcpServer | undefined> {
    const resolved = await resolveInLookupOrder(from, (scope) => this.get(scope, name));
    return resolved && { server: resolved.found, scope: resolved.scope };
  }

  /** Every server `from` sees: its own, then the shared ones it does not shadow. */
  async listVisible(from: RegistryScope): Promise<ScopedMcpServer[]> {
    const visible = await listInLookupOrder(this.bucket, from, (server) => server.name);
    return visible.map(({ found, scope }) => ({ server: found, scope }));
  }

  /** Validates and stores a definition in `scope`; returns it as stored. */
  async put(scope: RegistryScope, server: McpServerDefinitionInput): Promise<McpServerDefinition> {
    const parsed = McpServerDefinition.parse(server);
    await this.kv.put(scopedKey(scope, parsed.name), encodeJson(parsed));
    return parsed;
  }

  /** True when the definition existed in `scope`. */
  async delete(scope: RegistryScope, name: string): Promise<boolean> {
    const existed = (await this.get(scope, name)) !== undefined;
    if (existed) await this.kv.delete(scopedKey(scope, name));
    return existed;
  }

  async list(scope: RegistryScope): Promise<McpServerDefinition[]> {
    return listScope(this.bucket, scope);
  }
}
