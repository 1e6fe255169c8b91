/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`, each owned by one
 * account or by the shared catalogue (see ../registry/registry-scope.ts for the key layout). A run
 * resolves its agent in its own account first, then in the shared catalogue.
 */
import { AgentDefinition, Buckets, type AgentDefinitionInput } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { encodeJson } from '../json.js';
import { scopedKey, type RegistryScope } from '../registry/registry-scope.js';
import {
  accountsWithEntries,
  listInLookupOrder,
  listScope,
  readScopedEntry,
  resolveInLookupOrder,
  type DefinitionBucket,
} from '../registry/scoped-entries.js';

/** An agent and where it was found. */
export interface ScopedAgent {
  agent: AgentDefinition;
  scope: RegistryScope;
}

export class AgentStore {
  private readonly bucket: DefinitionBucket<typeof AgentDefinition>;

  constructor(private readonly kv: KV) {
    this.bucket = { kv, name: Buckets.AGENTS, schema: AgentDefinition };
  }

  async get(scope: RegistryScope, workflowId: string): Promise<AgentDefinition | undefined> {
    return readScopedEntry(this.bucket, scopedKey(scope, workflowId));
  }

  /**
   * The agent a task or caller of `from` gets under `workflowId`: an account's own of that id, else the
   * shared catalogue's.
   */
  async resolve(from: RegistryScope, workflowId: string): Promise<ScopedAgent | undefined> {
    const resolved = await resolveInLookupOrder(from, (scope) => this.get(scope, workflowId));
    return resolved && { agent: resolved.found, scope: resolved.scope };
  }

  /** Every agent `from` sees: its own, then the shared ones it does not shadow. */
  async listVisible(from: RegistryScope): Promise<ScopedAgent[]> {
    const visible = await listInLookupOrder(this.bucket, from, (agent) => agent.workflow_id);
    return visible.map(({ found, scope }) => ({ agent: found, scope }));
  }

  /** Validates and stores an agent in `scope`; returns it as stored (defaults applied). */
  async put(scope: RegistryScope, agent: AgentDefinitionInput): Promise<AgentDefinition> {
    const parsed = AgentDefinition.parse(agent);
    await this.kv.put(scopedKey(scope, parsed.workflow_id), encodeJson(parsed));
    return parsed;
  }

  /** True when the agent existed in `scope`. */
  async delete(scope: RegistryScope, workflowId: string): Promise<boolean> {
    const existed = (await this.get(scope, workflowId)) !== undefined;
    if (existed) await this.kv.delete(scopedKey(scope, workflowId));
    return existed;
  }

  /** The accounts that have agents of their own. */
  async accountIds(): Promise<Set<string>> {
    return accountsWithEntries(this.kv);
  }

  /** The agents of one scope, by workflow id. */
  async list(scope: RegistryScope): Promise<AgentDefinition[]> {
    return listScope(this.bucket, scope);
  }
}
