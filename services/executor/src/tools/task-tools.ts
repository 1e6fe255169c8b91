/**
 * The tools of one task's loop: the ones the task was assembled with, plus the dynamic tools (seed 004)
 * that tool results hand over in `_dynamic_tools`. A dynamic tool is callable from the model's next step
 * on, until the task ends.
 *
 * Who may add tools: recall (the native `recall_actions` tool, whose answers come from the mesh's own
 * recall service) and the tools the agent names in `dynamic_tool_sources`. Any other tool's answer comes
 * from a third party, and a third party must not be able to hand the model new callable tools: its
 * `_dynamic_tools` entries are all rejected and reported.
 *
 * A `_dynamic_tools` entry is a tool box tool (`api_url`) or a recalled MCP action (`mcp: {server,
 * tool_name}`), which runs on one of the task's own MCP servers (see tools/mcp/).
 *
 * Rules: a dynamic tool replaces an earlier dynamic tool of the same name (never two of one name); it
 * never replaces a tool the task was assembled with (the agent's configuration is not the tool results'
 * to change); entries that are not seed 004 tools, and tools past the model's limit, are rejected and
 * reported. Tool objects stay the same across steps: runners and validators cache work per object.
 */
import {
  describeZodError,
  DynamicMcpTool,
  DynamicTool,
  fromDynamicMcpTool,
  fromDynamicTool,
  toModelTool,
  type ModelTool,
  type ToolDefinition,
} from '@agentmesh/protocol';
import type { z } from 'zod';
import { RECALL_ACTIONS_CLASS } from './native/recall-actions.js';

/** OpenAI's limit on the functions of one request. */
export const MAX_TOOLS_PER_REQUEST = 128;

const DYNAMIC_TOOLS_FIELD = '_dynamic_tools';

export interface DynamicToolsChange {
  /** Function names now callable that were not before. */
  readonly added: string[];
  /** Function names whose earlier dynamic tool was replaced. */
  readonly replaced: string[];
  /** Entries left out, with the reason. */
  readonly rejected: { readonly index: number; readonly name?: string; readonly reason: string }[];
}

export class TaskToolSet {
  readonly #bound: ReadonlyMap<string, ToolDefinition>;
  readonly #dynamic = new Map<string, ToolDefinition>();
  readonly #sources: ReadonlySet<string>;
  #modelTools: ModelTool[] | undefined;

  /** `dynamicToolSources`: names of assembled tools whose results may add tools (besides recall's). */
  constructor(tools: readonly ToolDefinition[], dynamicToolSources: readonly string[] = []) {
    this.#bound = new Map(tools.map((tool) => [tool.name, tool]));
    this.#sources = new Set(dynamicToolSources);
  }

  /** Whether results of the tool called `name` may add dynamic tools to this task. */
  mayAddTools(name: string): boolean {
    const tool = this.#bound.get(name);
    if (tool === undefined) return false;
    return (tool.type === 'NATIVE' && tool.class_name === RECALL_ACTIONS_CLASS) || this.#sources.has(name);
  }

  get(name: string): ToolDefinition | undefined {
    return this.#bound.get(name) ?? this.#dynamic.get(name);
  }

  get size(): number {
    return this.#bound.size + this.#dynamic.size;
  }

  names(): string[] {
    return [...this.#bound.keys(), ...this.#dynamic.keys()];
  }

  /** What the model is told about the tools, in a stable order: assembled ones first. */
  modelTools(): ModelTool[] {
    this.#modelTools ??= [...this.#bound.values(), ...this.#dynamic.values()].map(toModelTool);
    return this.#modelTools;
  }

  /**
   * Adds the dynamic tools that the result of the tool called `from` carries; undefined when it carries
   * none. A tool that may not add tools has every entry rejected.
   */
  absorb(result: unknown, from: string): DynamicToolsChange | undefined {
    const entries = dynamicToolEntries(result);
    if (entries === undefined) return undefined;
    const change: DynamicToolsChange = { added: [], replaced: [], rejected: [] };
    if (!this.mayAddTools(from)) {
      entries.forEach((entry, index) =>
        change.rejected.push({
          index,
          ...nameOf(entry),
          reason: `${from} is not a source of dynamic tools for this agent (recall_actions, or a tool named in dynamic_tool_sources)`,
        }),
      );
      return change;
    }
    entries.forEach((entry, index) => {
      const parsed = parseRecalled(entry);
      if (!parsed.success) {
        change.rejected.push({
          index,
          ...nameOf(entry),
          reason: `not a dynamic tool: ${describeZodError(parsed.error).message}`,
        });
        return;
      }
      const tool = parsed.tool;
      if (this.#bound.has(tool.name)) {
        change.rejected.push({ index, name: tool.name, reason: 'the task already has a tool of that name' });
      } else if (this.#dynamic.has(tool.name)) {
        this.#dynamic.set(tool.name, tool);
        if (!change.added.includes(tool.name)) change.replaced.push(tool.name);
      } else if (this.size >= MAX_TOOLS_PER_REQUEST) {
        change.rejected.push({
          index,
          name: tool.name,
          reason: `the task has ${MAX_TOOLS_PER_REQUEST} tools already`,
        });
      } else {
        this.#dynamic.set(tool.name, tool);
        change.added.push(tool.name);
      }
    });
    if (change.added.length > 0 || change.replaced.length > 0) this.#modelTools = undefined;
    return change;
  }
}

/**
 * What the model and the task's events see of a result carrying `_dynamic_tools`: each tool as the model
 * calls it (its function name, description and parameters). Where and how a call is sent (`api_url`,
 * `fixed_params`, `original_schema`, an MCP tool's server and `fixed_arguments`) stays with the executor: fixed parameters may hold account data or
 * credentials meant for the tool box only. Entries that are not dynamic tools are shown as rejected.
 * Any other result is returned as it is.
 */
export function shownToolResult(result: unknown): unknown {
  const entries = dynamicToolEntries(result);
  if (entries === undefined) return result;
  const shown = entries.map((entry) => {
    const parsed = parseRecalled(entry);
    if (!parsed.success) return { ...nameOf(entry), rejected: 'not a usable dynamic tool' };
    const { name, description, parameters } = parsed.tool;
    const actionId = 'action_id' in parsed.tool ? parsed.tool.action_id : undefined;
    return { name, description, parameters, ...(actionId === undefined ? {} : { action_id: actionId }) };
  });
  return { ...(result as Record<string, unknown>), [DYNAMIC_TOOLS_FIELD]: shown };
}

/**
 * A tool box tool (seed 004) or, when it names an MCP server (`mcp`), a recalled MCP action, as the task runs
 * it; the error is that of the form the entry claims to be.
 */
function parseRecalled(
  entry: unknown,
): { success: true; tool: ToolDefinition } | { success: false; error: z.ZodError } {
  if (typeof entry === 'object' && entry !== null && 'mcp' in entry) {
    const parsed = DynamicMcpTool.safeParse(entry);
    return parsed.success ? { success: true, tool: fromDynamicMcpTool(parsed.data) } : parsed;
  }
  const parsed = DynamicTool.safeParse(entry);
  return parsed.success ? { success: true, tool: fromDynamicTool(parsed.data) } : parsed;
}

/** The entries of a result's `_dynamic_tools` list, or undefined when it carries none. */
export function dynamicToolEntries(result: unknown): unknown[] | undefined {
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return undefined;
  const entries = (result as Record<string, unknown>)[DYNAMIC_TOOLS_FIELD];
  return Array.isArray(entries) ? entries : undefined;
}

function nameOf(entry: unknown): { name?: string } {
  const name = typeof entry === 'object' && entry !== null ? (entry as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? { name } : {};
}
