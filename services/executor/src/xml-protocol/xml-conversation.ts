/**
 * The conversation as a model on the `<ACTION>` protocol reads it. The loop keeps the conversation in
 * native form (assistant `tool_calls`, `tool` messages); this writes each assistant turn's calls back as
 * the ACTION blocks after its prose, and each run of tool messages as one user message of `<OBSERVATION>`
 * blocks in call order, and puts the tool catalogue into the system prompt.
 */
import { ErrorCode, type ChatMessage, type ChatToolCall, type ChatToolMessage } from '@agentmesh/protocol';
import { formatAction } from './action-format.js';
import { jsonInputProblems } from './action-inputs.js';
import {
  failureObservation,
  observationBlock,
  observedFailure,
  readToolMessage,
  successObservation,
} from './observation-format.js';
import type { ToolCatalogue } from './tool-catalogue.js';
import { toolCataloguePrompt } from './tool-catalogue-prompt.js';

export function toXmlConversation(messages: readonly ChatMessage[], catalogue: ToolCatalogue): ChatMessage[] {
  const calls = new Map<string, ChatToolCall>();
  const converted: ChatMessage[] = [];
  let observations: string[] = [];
  const endObservations = () => {
    if (observations.length > 0) converted.push({ role: 'user', content: observations.join('\n') });
    observations = [];
  };
  for (const message of messages) {
    if (message.role === 'tool') {
      observations.push(observationOf(message, calls, catalogue));
      continue;
    }
    endObservations();
    if (message.role === 'assistant' && message.tool_calls !== undefined) {
      const { tool_calls: toolCalls, ...rest } = message;
      for (const call of toolCalls) calls.set(call.id, call);
      const actions = toolCalls.map((call) =>
        formatAction(catalogue.idOf(call.function.name), argumentsOf(call)),
      );
      const prose = textOf(message.content ?? '');
      converted.push({ ...rest, content: [prose, ...actions].filter((part) => part !== '').join('\n\n') });
    } else {
      converted.push(message);
    }
  }
  endObservations();
  return catalogue.tools.length === 0 ? converted : withToolPrompt(converted, toolCataloguePrompt(catalogue));
}

function observationOf(
  message: ChatToolMessage,
  calls: ReadonlyMap<string, ChatToolCall>,
  catalogue: ToolCatalogue,
): string {
  const call = calls.get(message.tool_call_id);
  const name = call?.function.name ?? 'unknown';
  const toolId = catalogue.idOf(name);
  const outcome = readToolMessage(textOf(message.content));
  if (outcome.ok) return observationBlock(successObservation(toolId, outcome.output));
  const tool = catalogue.byName(name);
  const notes = tool === undefined ? [] : jsonInputProblems(argumentsOf(call), tool.parameters);
  if (tool === undefined && outcome.error.code === ErrorCode.NOT_FOUND) {
    const ids = catalogue.tools.map((known) => known.id);
    notes.push(ids.length === 0 ? 'no tools are available' : `the tool ids are: ${ids.join(', ')}`);
  }
  return observationBlock(failureObservation(toolId, observedFailure(outcome.error, notes)));
}

/** The system prompt gains the tool section; a conversation without one gets it as its first message. */
function withToolPrompt(messages: ChatMessage[], prompt: string): ChatMessage[] {
  const [first, ...rest] = messages;
  if (first?.role !== 'system') return [{ role: 'system', content: prompt }, ...messages];
  const content =
    typeof first.content === 'string'
      ? `${first.content}\n\n${prompt}`
      : [...first.content, { type: 'text' as const, text: `\n\n${prompt}` }];
  return [{ ...first, content }, ...rest];
}

function argumentsOf(call: ChatToolCall | undefined): Record<string, unknown> {
  if (call === undefined) return {};
  try {
    const parsed: unknown = JSON.parse(call.function.arguments);
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

type TextContent = string | readonly ({ type: string; text?: unknown; refusal?: unknown } & object)[];

function textOf(content: TextContent): string {
  if (typeof content === 'string') return content;
  return content
    .map((part) =>
      typeof part.text === 'string' ? part.text : typeof part.refusal === 'string' ? part.refusal : '',
    )
    .join('');
}
