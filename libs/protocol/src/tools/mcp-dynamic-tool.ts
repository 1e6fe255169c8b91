// The recall form of an MCP tool (seed 004 phase 3: an action whose `action_source` is `{type: "mcp"}`): a
// `_dynamic_tools` entry that names the MCP server (its registry name) and the tool on it instead of an
// `api_url`. The executor calls it only on a server the task was assembled with (`runtime_config.mcp_servers`,
// whose credentials are in the task's vault): recall names a server, it cannot point a task at a new one.
import { z } from 'zod';
import type { McpTool } from './canonical.js';
import { toFunctionName } from './function-name.js';
import { JsonObject, JsonSchemaObject } from './json-schema.js';
import { McpServerName } from './mcp-server.js';
import { DynamicTool } from './dynamic-tool.js';

export const DynamicMcpTool = z.object({
  name: z.string().min(1),
  description: z.string(),
  /** What the model fills in; the executor narrows it to the server's own input schema when it lists it. */
  parameters: JsonSchemaObject,
  mcp: z.object({ server: McpServerName, tool_name: z.string().min(1) }),
  /** The action's instantiated arguments; they win over the model's. */
  fixed_arguments: JsonObject.default({}),
  action_id: z.string().min(1).optional(),
});
export type DynamicMcpTool = z.infer<typeof DynamicMcpTool>;
export type DynamicMcpToolInput = z.input<typeof DynamicMcpTool>;

/** A `_dynamic_tools` entry: a tool box tool (`api_url`) or an MCP tool (`mcp`). */
export const RecalledTool = z.union([DynamicTool, DynamicMcpTool]);
export type RecalledTool = z.infer<typeof RecalledTool>;

export function isDynamicMcpTool(tool: RecalledTool): tool is DynamicMcpTool {
  return 'mcp' in tool;
}

/** The canonical tool of a recalled MCP action: its name made a legal function name. */
export function fromDynamicMcpTool(tool: DynamicMcpTool): McpTool {
  return {
    type: 'MCP',
    name: toFunctionName(tool.name),
    description: tool.description,
    parameters: tool.parameters,
    origin: { format: 'dynamic-tool', id: tool.name },
    server: tool.mcp.server,
    tool_name: tool.mcp.tool_name,
    fixed_arguments: tool.fixed_arguments,
    ...(tool.action_id === undefined ? {} : { action_id: tool.action_id }),
  };
}
