/**
 * The protocol's conversation (OpenAI chat format) as an Anthropic Messages request: system and developer
 * messages become the `system` blocks, tool calls `tool_use` blocks, tool messages `tool_result` blocks in a
 * user turn, and an assistant turn's signed thinking blocks (kept in its `provider_state`) go back first in
 * its content, unchanged, as the API requires for a tool-use turn when thinking is on.
 *
 * Prompt caching: a `cache_control` breakpoint on the last system block and on the last tool (the prefix
 * every step of a task repeats), and, once the conversation holds an assistant turn (a loop), one on the
 * last block of the last message, so each step reads the prefix the step before wrote. Three of the API's
 * four breakpoints; a prefix shorter than the model's minimum is simply not cached.
 */
import type Anthropic from '@anthropic-ai/sdk';
import type { ChatMessage } from '@agentmesh/protocol';
import type { ChatRequest, ToolChoice } from '../chat-types.js';
import { argumentsObject, textOf } from '../native/native-call.js';

/** Anthropic requires `max_tokens`; an agent that sets none gets this. */
export const DEFAULT_ANTHROPIC_MAX_TOKENS = 4096;

export const ANTHROPIC_API = 'anthropic-messages';

/** `max_tokens` must exceed the thinking budget: an agent that sets none gets the budget plus the default. */
export function defaultMaxTokens(thinkingBudget: number | undefined): number {
  return thinkingBudget === undefined
    ? DEFAULT_ANTHROPIC_MAX_TOKENS
    : thinkingBudget + DEFAULT_ANTHROPIC_MAX_TOKENS;
}

type Block = Anthropic.ContentBlockParam;
type ThinkingBlock = Anthropic.ThinkingBlockParam | Anthropic.RedactedThinkingBlockParam;
const EPHEMERAL = { type: 'ephemeral' } as const;

export function anthropicRequest(chat: ChatRequest): Anthropic.MessageCreateParamsStreaming {
  const system: Anthropic.TextBlockParam[] = [];
  const messages: Anthropic.MessageParam[] = [];
  const push = (role: 'user' | 'assistant', blocks: Block[]): void => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    // The API wants turns to alternate: tool results and the user's next words share one user turn.
    if (last !== undefined && last.role === role && Array.isArray(last.content)) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const message of chat.messages) {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text !== '') system.push({ type: 'text', text });
        break;
      }
      case 'user':
        push('user', userBlocks(message.content));
        break;
      case 'assistant':
        push('assistant', assistantBlocks(message));
        break;
      case 'tool':
        push('user', [
          { type: 'tool_result', tool_use_id: message.tool_call_id, content: textOf(message.content) },
        ]);
        break;
    }
  }
  const lastSystem = system[system.length - 1];
  if (lastSystem !== undefined) lastSystem.cache_control = EPHEMERAL;
  if (messages.some((m) => m.role === 'assistant')) markLastBlock(messages);

  const thinking = chat.thinking_budget_tokens;
  const request: Anthropic.MessageCreateParamsStreaming = {
    model: chat.model,
    max_tokens: chat.max_tokens ?? defaultMaxTokens(thinking),
    messages,
    stream: true,
  };
  if (system.length > 0) request.system = system;
  if (thinking !== undefined) request.thinking = { type: 'enabled', budget_tokens: thinking };
  // The SDK's types (1.x) dropped the sampling parameters, as the newest models refuse them; the API takes
  // `temperature` from the others, so an agent that sets one sends it (a model refusing it answers 400,
  // which names it). Thinking allows no temperature but the default: it is not sent then.
  if (chat.temperature !== undefined && thinking === undefined) {
    (request as Anthropic.MessageCreateParamsStreaming & { temperature?: number }).temperature =
      chat.temperature;
  }
  if (chat.tools && chat.tools.length > 0) {
    const tools: Anthropic.Tool[] = chat.tools.map(({ function: fn }) => ({
      name: fn.name,
      description: fn.description,
      input_schema: { type: 'object', ...fn.parameters } as Anthropic.Tool.InputSchema,
    }));
    const lastTool = tools[tools.length - 1];
    if (lastTool !== undefined) lastTool.cache_control = EPHEMERAL;
    request.tools = tools;
    const choice = toolChoice(chat.tool_choice, chat.parallel_tool_calls);
    if (choice !== undefined) request.tool_choice = choice;
  }
  return request;
}

function userBlocks(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) return [];
  const blocks: Block[] = [];
  for (const part of content as Record<string, unknown>[]) {
    if (part['type'] === 'text' && typeof part['text'] === 'string') {
      blocks.push({ type: 'text', text: part['text'] });
    } else if (part['type'] === 'image_url') {
      const url = (part['image_url'] as { url?: unknown } | undefined)?.url;
      if (typeof url !== 'string') continue;
      const data = /^data:(image\/(?:png|jpeg|gif|webp));base64,(.*)$/s.exec(url);
      blocks.push(
        data
          ? {
              type: 'image',
              source: {
                type: 'base64',
                media_type: data[1] as Anthropic.Base64ImageSource['media_type'],
                data: data[2] ?? '',
              },
            }
          : { type: 'image', source: { type: 'url', url } },
      );
    }
  }
  return blocks;
}

function assistantBlocks(message: ChatMessage & { role: 'assistant' }): Block[] {
  const blocks: Block[] = [...thinkingBlocks(message['provider_state'])];
  const text = textOf(message.content);
  if (text !== '') blocks.push({ type: 'text', text });
  for (const call of message.tool_calls ?? []) {
    blocks.push({
      type: 'tool_use',
      id: call.id,
      name: call.function.name,
      input: argumentsObject(call.function.arguments),
    });
  }
  return blocks;
}

/** The signed thinking blocks an Anthropic turn kept; nothing from another API's state or a malformed one. */
function thinkingBlocks(state: unknown): ThinkingBlock[] {
  if (typeof state !== 'object' || state === null) return [];
  const { api, thinking } = state as { api?: unknown; thinking?: unknown };
  if (api !== ANTHROPIC_API || !Array.isArray(thinking)) return [];
  const blocks: ThinkingBlock[] = [];
  for (const block of thinking as Record<string, unknown>[]) {
    if (
      block['type'] === 'thinking' &&
      typeof block['thinking'] === 'string' &&
      typeof block['signature'] === 'string'
    ) {
      blocks.push({ type: 'thinking', thinking: block['thinking'], signature: block['signature'] });
    } else if (block['type'] === 'redacted_thinking' && typeof block['data'] === 'string') {
      blocks.push({ type: 'redacted_thinking', data: block['data'] });
    }
  }
  return blocks;
}

function markLastBlock(messages: Anthropic.MessageParam[]): void {
  const content = messages[messages.length - 1]?.content;
  if (!Array.isArray(content)) return;
  const block = content[content.length - 1];
  // Thinking blocks cannot carry a breakpoint; every other block a conversation holds here can.
  if (block !== undefined && block.type !== 'thinking' && block.type !== 'redacted_thinking') {
    (block as { cache_control?: unknown }).cache_control = EPHEMERAL;
  }
}

function toolChoice(
  choice: ToolChoice | undefined,
  parallel: boolean | undefined,
): Anthropic.ToolChoice | undefined {
  const serial = parallel === false ? { disable_parallel_tool_use: true } : {};
  if (choice === undefined) return parallel === false ? { type: 'auto', ...serial } : undefined;
  if (choice === 'none') return { type: 'none' };
  if (choice === 'auto') return { type: 'auto', ...serial };
  if (choice === 'required') return { type: 'any', ...serial };
  return { type: 'tool', name: choice.function.name, ...serial };
}
