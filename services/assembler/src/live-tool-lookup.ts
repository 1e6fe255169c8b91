/**
 * Tool lookups for assembly: the live, KV-watched catalogue first; on a miss, one direct read of the
 * registry, because a tool stored a moment before the task arrived may not have reached the watch yet
 * (the task and the watch travel on different streams), and a new tool must work without a restart.
 * Both resolve in the task's account first, then in the shared catalogue.
 */
import type { PluginCatalogue, RegistryScope, ScopedTool } from '@agentmesh/bus';
import type { ToolLookup } from './task-assembler.js';

export interface ToolRegistryReader {
  resolve(from: RegistryScope, name: string): Promise<ScopedTool | undefined>;
}

export function liveToolLookup(
  catalogue: Pick<PluginCatalogue, 'resolve'>,
  registry: ToolRegistryReader,
): ToolLookup {
  return {
    async resolve(from, name) {
      return (catalogue.resolve(from, name) ?? (await registry.resolve(from, name)))?.tool;
    },
  };
}
