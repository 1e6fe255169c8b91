// The shared catalogue of the tool registry as the assembler's tests address it: by bare tool name.
import { SHARED_CATALOGUE, type PluginStore } from '@agentmesh/bus';
import type { ToolDefinition } from '@agentmesh/protocol';

export interface SharedPlugins {
  get(name: string): Promise<ToolDefinition | undefined>;
  list(): Promise<ToolDefinition[]>;
  put(tool: ToolDefinition): Promise<ToolDefinition>;
  delete(name: string): Promise<boolean>;
}

export function sharedPlugins(store: PluginStore): SharedPlugins {
  return {
    get: (name) => store.get(SHARED_CATALOGUE, name),
    list: () => store.list(SHARED_CATALOGUE),
    put: (tool) => store.put(SHARED_CATALOGUE, tool),
    delete: (name) => store.delete(SHARED_CATALOGUE, name),
  };
}
