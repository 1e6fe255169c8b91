/**
 * Tool lookups for assembly: the live, KV-watched catalogue first; on a miss, one direct read of the
 * registry, because a tool stored a moment before the task arrived may not have reached the watch yet
 * (the task and the watch travel on different streams), and a new tool must work without a restart.
 */
import type { ToolDefinition } from '@agentmesh/protocol';
import type { PluginCatalogue } from '@agentmesh/bus';
import type { ToolLookup } from './task-assembler.js';

export interface ToolRegistryReader {
  get(name: string): Promise<ToolDefinition | undefined>;
}

export function liveToolLookup(
  catalogue: Pick<PluginCatalogue, 'get'>,
  registry: ToolRegistryReader,
): ToolLookup {
  return {
    async get(name) {
      return catalogue.get(name) ?? (await registry.get(name));
    },
  };
}
