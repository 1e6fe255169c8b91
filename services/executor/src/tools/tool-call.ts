/**
 * One tool call of the model, from its raw form to what goes back into the conversation: which tool it
 * names, its arguments parsed and validated against the tool's schema, and the `tool` message carrying
 * the outcome. Whatever the model got wrong (an unknown tool, arguments that do not parse or do not fit
 * the schema) becomes a tool error the model can correct, never an exception.
 */
import {
  ErrorCode,
  errorBody,
  type ChatToolCall,
  type ChatToolMessage,
  type ToolDefinition,
} from '@agentmesh/protocol';
import { parseToolArguments, toolFailure, validateToolArguments, type ToolOutcome } from './index.js';

export interface PreparedToolCall {
  readonly callId: string;
  /** The name the model used (also when no tool has it). */
  readonly toolName: string;
  /** What `tool_start` shows: the parsed arguments, or the raw text when they do not parse. */
  readonly shownArguments: Record<string, unknown> | string;
  /** Ready to run, or the failure the model gets instead. */
  readonly run: { tool: ToolDefinition; args: Record<string, unknown> } | { failure: ToolOutcome };
}

/** The tools a call may name (the task's tool set). */
export interface CallableTools {
  get(name: string): ToolDefinition | undefined;
  names(): string[];
}

/** Used when a model sends a call without a name; events require a non-empty name. */
const UNNAMED_TOOL = '(unnamed)';

export function prepareToolCall(call: ChatToolCall, tools: CallableTools): PreparedToolCall {
  const toolName = call.function.name || UNNAMED_TOOL;
  const parsed = parseToolArguments(call.function.arguments);
  const shownArguments = parsed.ok ? parsed.value : call.function.arguments;
  const prepared = { callId: call.id, toolName, shownArguments };
  const tool = tools.get(call.function.name);
  if (tool === undefined) {
    const known = tools.names();
    const offer = known.length === 0 ? 'no tools are available' : `available tools: ${known.join(', ')}`;
    return {
      ...prepared,
      run: { failure: toolFailure(ErrorCode.NOT_FOUND, `there is no tool named "${toolName}"; ${offer}`) },
    };
  }
  if (!parsed.ok) return { ...prepared, run: { failure: { ok: false, error: parsed.error } } };
  const checked = validateToolArguments(tool.parameters, parsed.value);
  if (!checked.ok) return { ...prepared, run: { failure: { ok: false, error: checked.error } } };
  return { ...prepared, run: { tool, args: checked.value } };
}

/** The conversation's answer to one call: the result as text, or the error as a JSON object. */
export function toolMessage(callId: string, outcome: ToolOutcome): ChatToolMessage {
  let content: string;
  if (outcome.ok) {
    content =
      typeof outcome.result === 'string' ? outcome.result : (JSON.stringify(outcome.result) ?? 'null');
  } else {
    const { code, message, detail } = outcome.error;
    content = JSON.stringify({ error: errorBody(code, message, detail) });
  }
  return { role: 'tool', tool_call_id: callId, content };
}

/** Gives every call a non-empty id, so each tool message can name the call it answers. */
export function withCallIds(calls: readonly ChatToolCall[], step: number): ChatToolCall[] {
  return calls.map((call, index) => (call.id ? call : { ...call, id: `call_${step}_${index + 1}` }));
}
