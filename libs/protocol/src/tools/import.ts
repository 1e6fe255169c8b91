// Reading a tool definition whose format is not known in advance (a plugin directory, a management upload):
// recognise the format by its distinctive fields, validate with that format's schema, convert to canonical.
import { z } from 'zod';
import { ToolDefinition, ToolFormat, ToolType } from './canonical.js';
import { shadowedContextParams } from './context-params.js';
import { DynamicTool } from './dynamic-tool.js';
import { HttpPlugin } from './http-plugin.js';
import { PayloadTool } from './payload-tool.js';
import { pluginFromRow, SysAiPluginRow } from './sys-ai-plugin-row.js';
import { ToolJson } from './tool-json.js';
import { fromDynamicTool, fromHttpPlugin, fromPayloadTool, fromToolJson } from './adapters.js';

/** A seed 000 plugin as a row of RuoYi's `sys_ai_plugin` table (see sys-ai-plugin-row.ts). */
export const SYS_AI_PLUGIN_ROW = 'sys-ai-plugin-row';

/**
 * The formats a tool file can arrive in; `canonical` means it already is a ToolDefinition, and a
 * `sys_ai_plugin` row is a seed 000 plugin spread over table columns.
 */
export type DetectedToolFormat =
  | 'canonical'
  | typeof SYS_AI_PLUGIN_ROW
  | typeof ToolFormat.HTTP_PLUGIN
  | typeof ToolFormat.PAYLOAD_TOOL
  | typeof ToolFormat.TOOL_JSON
  | typeof ToolFormat.DYNAMIC_TOOL;

const CANONICAL_TYPES: ReadonlySet<unknown> = new Set(Object.values(ToolType));

export function detectToolFormat(value: unknown): DetectedToolFormat | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const has = (key: string) => Object.hasOwn(value, key);
  const type = (value as { type?: unknown }).type;
  if (has('toolId')) return ToolFormat.TOOL_JSON;
  if (CANONICAL_TYPES.has(type) && has('parameters')) return 'canonical';
  // An A2A tool's parameters come from the executor's default (a `message`); its card URL marks it.
  if (type === ToolType.A2A && has('card_url')) return 'canonical';
  if ((type === 'HTTP' || type === 'NATIVE') && has('execution_config')) return ToolFormat.PAYLOAD_TOOL;
  if (has('parameter_schema') && has('execution_config')) return SYS_AI_PLUGIN_ROW;
  if (has('execution')) return ToolFormat.HTTP_PLUGIN;
  if (has('api_url')) return ToolFormat.DYNAMIC_TOOL;
  return undefined;
}

export type ImportedTool =
  | { success: true; format: DetectedToolFormat; tool: ToolDefinition }
  /** `error` is undefined when the format itself was not recognised. */
  | { success: false; format: DetectedToolFormat | undefined; error: z.ZodError | undefined };

/** Any supported tool JSON → canonical ToolDefinition. */
export function importToolDefinition(value: unknown): ImportedTool {
  const format = detectToolFormat(value);
  switch (format) {
    case undefined:
      return { success: false, format, error: undefined };
    case 'canonical':
      return outcome(format, ToolDefinition.safeParse(value), (tool) => tool);
    case ToolFormat.TOOL_JSON:
      return outcome(format, ToolJson.safeParse(value), fromToolJson);
    case ToolFormat.PAYLOAD_TOOL:
      return outcome(format, PayloadTool.safeParse(value), fromPayloadTool);
    case ToolFormat.HTTP_PLUGIN:
      return outcome(format, HttpPlugin.safeParse(value), fromHttpPlugin);
    case SYS_AI_PLUGIN_ROW:
      return outcome(format, SysAiPluginRow.safeParse(value), (row) => fromHttpPlugin(pluginFromRow(row)));
    case ToolFormat.DYNAMIC_TOOL:
      return outcome(format, DynamicTool.safeParse(value), fromDynamicTool);
  }
}

function outcome<In>(
  format: DetectedToolFormat,
  parsed: z.ZodSafeParseResult<In>,
  convert: (input: In) => ToolDefinition,
): ImportedTool {
  if (!parsed.success) return { success: false, format, error: parsed.error };
  const tool = convert(parsed.data);
  const shadowing = contextParamsShadowing(tool, format);
  return shadowing === undefined
    ? { success: true, format, tool }
    : { success: false, format, error: shadowing };
}

/** A tool whose `context_params` name one of its model parameters: the model would set what the task sets. */
function contextParamsShadowing(tool: ToolDefinition, format: DetectedToolFormat): z.ZodError | undefined {
  if (tool.type !== ToolType.HTTP) return undefined;
  const { context_params: params, request_template: template } = tool.execution;
  const shadowed = shadowedContextParams(params, {
    parameters: tool.parameters,
    bindings: template?.arguments,
  });
  if (shadowed.length === 0) return undefined;
  const where =
    format === ToolFormat.PAYLOAD_TOOL || format === SYS_AI_PLUGIN_ROW ? 'execution_config' : 'execution';
  return new z.ZodError(
    shadowed.map((index) => ({
      code: 'custom' as const,
      path: [where, 'context_params', index, 'target'],
      message: `${params?.[index]?.target} is also one of the tool's parameters: the model would be offered a value the task sets; remove it from parameters`,
      input: params?.[index]?.target,
    })),
  );
}
