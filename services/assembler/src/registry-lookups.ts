/**
 * The agent, tool and MCP server lookups assembly uses, over the registry mirrors kept live by KV watches (see
 * `LiveDefinitions` of @agentmesh/bus): the task's account first, then the shared catalogue; a name the
 * mirror lacks is read from KV before it counts as unknown.
 */
import type { RegistryScope } from '@agentmesh/bus';
import type { AgentDefinition, McpServerDefinition, ToolDefinition } from '@agentmesh/protocol';
import type { AgentLookup, McpServerLookup, ToolLookup } from './task-assembler.js';

interface Definitions<T> {
  resolve(from: RegistryScope, name: string): Promise<{ found: T } | undefined>;
}

export function agentLookup(agents: Definitions<AgentDefinition>): AgentLookup {
  return {
    async resolve(from, workflowId) {
      const resolved = await agents.resolve(from, workflowId);
      return resolved && { agent: resolved.found };
    },
  };
}

export function toolLookup(tools: Definitions<ToolDefinition>): ToolLookup {
  return {
    async resolve(from, name) {
      return (await tools.resolve(from, name))?.found;
    },
  };
}

export function mcpServerLookup(servers: Definitions<McpServerDefinition>): McpServerLookup {
  return {
    async resolve(from, name) {
      return (await servers.resolve(from, name))?.found;
    },
  };
}
