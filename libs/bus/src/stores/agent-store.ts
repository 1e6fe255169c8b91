/**
 * Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`, each owned by one
 * account or by the shared catalogue (see ../registry/registry-scope.ts for the key layout). A run
 * resolves its agent in its own account first, then in the shared catalogue.
 */
import { AgentDefinition, type AgentDefinitionInput } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { decodeJson, encodeJson } from '../json.js';
import { collect } from '../kv-keys.js';
import { lookupOrder, scopedKey, scopePrefix, type RegistryScope } from '../registry/registry-scope.js';

/** An agent and where it was found. */
export interface ScopedAgent {
  agent: AgentDefinition;
  scope: RegistryScope;
}

export class AgentStore {
  constructor(private readonly kv: KV) {}

  async get(scope: RegistryScope, workflowId: string): Promise<AgentDefinition | undefined> {
    const key = scopedKey(scope, workflowId);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(AgentDefinition, entry.value, `mesh_agents/${key}`);
  }

  /** The agent an account's task runs: its own of that id, else the shared catalogue's. */
  async resolve(accountId: string, workflowId: string): Promise<ScopedAgent | undefined> {
    for (const scope of lookupOrder(accountId)) {
      const agent = await this.get(scope, workflowId);
      if (agent !== undefined) return { agent, scope };
    }
    return undefined;
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

  /** The agents of one scope, by workflow id. */
  async list(scope: RegistryScope): Promise<AgentDefinition[]> {
    const prefix = scopePrefix(scope);
    const keys = await collect(await this.kv.keys(`${prefix}>`));
    const agents = await Promise.all(
      keys.sort().map(async (key) => {
        const entry = await this.kv.get(key);
        if (!entry || entry.operation !== 'PUT') return undefined;
        return decodeJson(AgentDefinition, entry.value, `mesh_agents/${key}`);
      }),
    );
    return agents.filter((agent): agent is AgentDefinition => agent !== undefined);
  }
}
