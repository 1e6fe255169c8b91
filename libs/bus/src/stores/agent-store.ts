/** Agents (workflow_id → system prompt, model, bound tools, limits) in KV `mesh_agents`. */
import { AgentDefinition, type AgentDefinitionInput } from '@agentmesh/protocol';
import type { KV } from '@nats-io/kv';
import { decodeJson, encodeJson } from '../json.js';
import { collect } from '../kv-keys.js';

export class AgentStore {
  constructor(private readonly kv: KV) {}

  async get(workflowId: string): Promise<AgentDefinition | undefined> {
    const entry = await this.kv.get(workflowId);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(AgentDefinition, entry.value, `mesh_agents/${workflowId}`);
  }

  /** Validates and stores an agent; returns it as stored (defaults applied). */
  async put(agent: AgentDefinitionInput): Promise<AgentDefinition> {
    const parsed = AgentDefinition.parse(agent);
    await this.kv.put(parsed.workflow_id, encodeJson(parsed));
    return parsed;
  }

  /** True when the agent existed. */
  async delete(workflowId: string): Promise<boolean> {
    const existed = (await this.get(workflowId)) !== undefined;
    if (existed) await this.kv.delete(workflowId);
    return existed;
  }

  async list(): Promise<AgentDefinition[]> {
    const keys = await collect(await this.kv.keys());
    const agents = await Promise.all(keys.sort().map((key) => this.get(key)));
    return agents.filter((agent): agent is AgentDefinition => agent !== undefined);
  }
}
