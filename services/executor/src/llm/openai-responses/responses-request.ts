/**
 * The protocol's conversation (OpenAI chat format) as an OpenAI Responses request, stateless: `store:
 * false`, the whole conversation sent each turn, and the reasoning items of each assistant turn (kept in
 * its `provider_state`, with their `encrypted_content`, asked for by `include`) passed back before that
 * turn's function calls, as the API wants for reasoning models calling tools. Tool calls become
 * `function_call` items, tool messages `function_call_output` items.
 */
import type OpenAI from 'openai';
import type { ChatMessage } from '@agentmesh/protocol';
import type { ChatRequest } from '../chat-types.js';
import { textOf } from '../native/native-call.js';

export const RESPONSES_API = 'openai-responses';

type Params = OpenAI.Responses.ResponseCreateParamsStreaming;
type InputItem = OpenAI.Responses.ResponseInputItem;

export function responsesRequest(chat: ChatRequest): Params {
  const input: InputItem[] = [];
  for (const message of chat.messages) {
    switch (message.role) {
      case 'system':
      case 'developer':
        input.push({ role: message.role, content: textOf(message.content) });
        break;
      case 'user':
        input.push({ role: 'user', content: userContent(message.content) });
        break;
      case 'assistant':
        input.push(...assistantItems(message));
        break;
      case 'tool':
        input.push({
          type: 'function_call_output',
          call_id: message.tool_call_id,
          output: textOf(message.content),
        });
        break;
    }
  }
  const request: Params = {
    model: chat.model,
    input,
    stream: true,
    store: false,
    include: ['reasoning.encrypted_content'],
  };
  if (chat.temperature !== undefined) request.temperature = chat.temperature;
  if (chat.max_tokens !== undefined) request.max_output_tokens = chat.max_tokens;
  if (chat.tools && chat.tools.length > 0) {
    request.tools = chat.tools.map(({ function: fn }) => ({
      type: 'function',
      name: fn.name,
      description: fn.description,
      parameters: fn.parameters,
      strict: false,
    }));
    if (chat.tool_choice !== undefined) {
      request.tool_choice =
        typeof chat.tool_choice === 'string'
          ? chat.tool_choice
          : { type: 'function', name: chat.tool_choice.function.name };
    }
    if (chat.parallel_tool_calls !== undefined) request.parallel_tool_calls = chat.parallel_tool_calls;
  }
  return request;
}

function userContent(content: unknown): string | OpenAI.Responses.ResponseInputMessageContentList {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const parts: OpenAI.Responses.ResponseInputMessageContentList = [];
  for (const part of content as Record<string, unknown>[]) {
    if (part['type'] === 'text' && typeof part['text'] === 'string')
      parts.push({ type: 'input_text', text: part['text'] });
    else if (part['type'] === 'image_url') {
      const url = (part['image_url'] as { url?: unknown } | undefined)?.url;
      if (typeof url === 'string') parts.push({ type: 'input_image', image_url: url, detail: 'auto' });
    }
  }
  return parts;
}

function assistantItems(message: ChatMessage & { role: 'assistant' }): InputItem[] {
  const items: InputItem[] = [...reasoningItems(message['provider_state'])];
  const text = textOf(message.content);
  if (text !== '') items.push({ role: 'assistant', content: text });
  for (const call of message.tool_calls ?? []) {
    items.push({
      type: 'function_call',
      call_id: call.id,
      name: call.function.name,
      arguments: call.function.arguments,
    });
  }
  return items;
}

/** The reasoning items a Responses turn kept; nothing from another API's state or a malformed one. */
function reasoningItems(state: unknown): OpenAI.Responses.ResponseReasoningItem[] {
  if (typeof state !== 'object' || state === null) return [];
  const { api, reasoning } = state as { api?: unknown; reasoning?: unknown };
  if (api !== RESPONSES_API || !Array.isArray(reasoning)) return [];
  return (reasoning as Record<string, unknown>[])
    .filter((item) => item['type'] === 'reasoning' && typeof item['id'] === 'string')
    .map((item) => ({
      type: 'reasoning',
      id: item['id'] as string,
      summary: Array.isArray(item['summary'])
        ? (item['summary'] as OpenAI.Responses.ResponseReasoningItem['summary'])
        : [],
      ...(typeof item['encrypted_content'] === 'string'
        ? { encrypted_content: item['encrypted_content'] }
        : {}),
    }));
}
