/**
 * The agent, tool and MCP server lookups assembly uses, over the registry mirrors kept live by KV watches (see
 * `LiveDefinitions` of @agentmesh/bus): the task's account first, then the shared catalogue; a name the
 * mirror lacks is read from KV before it counts as unknown.
 */
import { agentVersionKey, stampedAgent, type RegistryScope, type StoredAgent } from '@agentmesh/bus';
import type { McpServerDefinition, ToolDefinition } from '@agentmesh/protocol';
import type { AgentLookup, McpServerLookup, ToolLookup } from './task-assembler.js';

interface Definitions<T> {
  resolve(from: RegistryScope, name: string): Promise<{ found: T; scope: RegistryScope } | undefined>;
}

/** Agents: the name's entry is the current version; a pinned one is read from its immutable key. */
export function agentLookup(
  agents: Definitions<StoredAgent> & { getKey(key: string): Promise<StoredAgent | undefined> },
): AgentLookup {
  return {
    async resolve(from, workflowId) {
      const resolved = await agents.resolve(from, workflowId);
      if (!resolved) return undefined;
      const agent = stampedAgent(resolved.found);
      return { agent, version: { version: agent.version, digest: agent.digest } };
    },
    async resolveVersion(from, workflowId, version) {
      const resolved = await agents.resolve(from, workflowId);
      if (!resolved) return undefined;
      const current = stampedAgent(resolved.found);
      const stored =
        current.version === version
          ? current
          : await agents.getKey(agentVersionKey(resolved.scope, workflowId, version));
      if (!stored) return {};
      const agent = stampedAgent(stored);
      return {
        agent,
        version: { version: agent.version, digest: agent.digest },
        ...(agent.tool_digests && { toolDigests: agent.tool_digests }),
      };
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
