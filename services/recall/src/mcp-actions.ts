/**
 * Seed 004 phase 3, `mcp` action sources: the actions run as a tool of an MCP server (`action_source:
 * {type: "mcp", mcp_server, tool_name}`). Recall answers them as `_dynamic_tools` entries that carry the
 * server's registry name and the tool's MCP name instead of an `api_url`; the action's instantiated
 * `parameters` become `fixed_arguments`, and what the action leaves open (`dynamic_params`) is what the model
 * is asked for. Recall does not connect to the server (it holds no credentials): the executor calls it, and
 * only on a server the task's agent binds.
 */
import {
  McpServerName,
  toFunctionName,
  type Action,
  type ActionSource,
  type DynamicMcpTool,
  type JsonSchemaObject,
} from '@agentmesh/protocol';
import { actionIdOf } from './dynamic-tools.js';
import { UnsupportedActionTypeError } from './recall-errors.js';

/** Where an `mcp` source's actions run. */
export interface McpActionTarget {
  readonly server: string;
  readonly toolName: string;
}

/** The server and tool of an `mcp` action source; a source without them is unsupported, as is any other. */
export function mcpTargetOf(source: ActionSource): McpActionTarget {
  const server = source.mcp_server;
  const toolName = source.tool_name;
  if (server === undefined || toolName === undefined || !McpServerName.safeParse(server).success) {
    throw new UnsupportedActionTypeError(source, 'an mcp action source names its mcp_server and tool_name');
  }
  return { server, toolName };
}

const MAX_NAME_LENGTH = 64;

/** One tool per action: the first only when singular (seed §2.3.1), every distinct one when plural. */
export function mcpDynamicToolsFor(
  target: McpActionTarget,
  actions: readonly Action[],
  plural: boolean,
  actionTypeName: string | undefined,
): DynamicMcpTool[] {
  const description = actionTypeName ?? `${target.toolName} on MCP server ${target.server}`;
  if (!plural) {
    const [first] = actions;
    return first === undefined
      ? []
      : [{ ...mcpTool(target, first, description), name: toFunctionName(target.toolName) }];
  }
  const tools = new Map<string, DynamicMcpTool>();
  for (const action of actions) {
    const actionId = actionIdOf(action);
    const stem = toFunctionName(target.toolName).slice(0, MAX_NAME_LENGTH - actionId.length - 1);
    const name = `${stem}_${actionId}`;
    if (!tools.has(name))
      tools.set(name, { ...mcpTool(target, action, description), name, action_id: actionId });
  }
  return [...tools.values()];
}

function mcpTool(target: McpActionTarget, action: Action, description: string): DynamicMcpTool {
  return {
    name: target.toolName,
    description,
    parameters: openParameters(action),
    mcp: { server: target.server, tool_name: target.toolName },
    fixed_arguments: action.parameters,
  };
}

/** The arguments the action leaves to the model, any type; the server checks them. */
function openParameters(action: Action): JsonSchemaObject {
  const open = Object.keys(action.dynamic_params ?? {}).filter(
    (key) => !Object.hasOwn(action.parameters, key),
  );
  return { type: 'object', properties: Object.fromEntries(open.map((key) => [key, {}])) };
}
