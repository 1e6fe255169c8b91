/**
 * The protocol's conversation (OpenAI chat format) as an Amazon Bedrock ConverseStream request: system and
 * developer messages become `system` text blocks, tool calls `toolUse` blocks, tool messages `toolResult`
 * blocks in one user turn, and an assistant turn's signed reasoning (kept in its `provider_state`) goes
 * back first in its content, unchanged with its signature, as Bedrock requires for a tool-use turn when
 * reasoning is on.
 *
 * Prompt caching, as for Anthropic: a `cachePoint` after the system blocks and after the tool list (the
 * prefix every step repeats), and, once the conversation holds an assistant turn, one after the last
 * message's content, so each step reads the prefix the step before wrote. Models without prompt caching
 * on Bedrock ignore them; a prefix shorter than the model's minimum is simply not cached.
 */
import type {
  ContentBlock,
  ConverseStreamCommandInput,
  Message,
  SystemContentBlock,
  Tool,
  ToolChoice as BedrockToolChoice,
} from '@aws-sdk/client-bedrock-runtime';
import type { ChatMessage } from '@agentmesh/protocol';
import { defaultMaxTokens } from '../anthropic-messages/anthropic-request.js';
import type { ChatRequest, ToolChoice } from '../chat-types.js';
import { argumentsObject, textOf } from '../native/native-call.js';

export const BEDROCK_API = 'bedrock-converse';

const CACHE_POINT = { cachePoint: { type: 'default' as const } };

/** A reasoning block kept on an assistant turn: text and signature, or Bedrock's encrypted redacted bytes (base64). */
export type KeptReasoning = { text: string; signature?: string } | { redacted: string };

export function bedrockRequest(chat: ChatRequest): ConverseStreamCommandInput {
  const system: SystemContentBlock[] = [];
  const messages: Message[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlock[]): void => {
    if (blocks.length === 0) return;
    const last = messages[messages.length - 1];
    // Turns alternate: tool results and the user's next words share one user turn.
    if (last !== undefined && last.role === role && last.content !== undefined) last.content.push(...blocks);
    else messages.push({ role, content: blocks });
  };
  for (const message of chat.messages) {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text !== '') system.push({ text });
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
          {
            toolResult: {
              toolUseId: message.tool_call_id,
              content: [{ text: textOf(message.content) }],
            },
          },
        ]);
        break;
    }
  }
  if (system.length > 0) system.push(CACHE_POINT);
  if (messages.some((m) => m.role === 'assistant')) messages[messages.length - 1]?.content?.push(CACHE_POINT);

  const request: ConverseStreamCommandInput = { modelId: chat.model, messages };
  if (system.length > 0) request.system = system;
  const inference: NonNullable<ConverseStreamCommandInput['inferenceConfig']> = {};
  if (chat.max_tokens !== undefined) inference.maxTokens = chat.max_tokens;
  // The thinking budget must stay below maxTokens, which models default lower than a budget may be.
  else if (chat.thinking_budget_tokens !== undefined)
    inference.maxTokens = defaultMaxTokens(chat.thinking_budget_tokens);
  // Extended thinking (Claude on Bedrock) takes no temperature: the model refuses one with thinking on.
  if (chat.temperature !== undefined && chat.thinking_budget_tokens === undefined) {
    inference.temperature = chat.temperature;
  }
  if (Object.keys(inference).length > 0) request.inferenceConfig = inference;
  if (chat.thinking_budget_tokens !== undefined) {
    // Bedrock passes model-specific fields through; this is Anthropic's `thinking` on Claude models.
    request.additionalModelRequestFields = {
      thinking: { type: 'enabled', budget_tokens: chat.thinking_budget_tokens },
    };
  }
  const usesTools = messages.some((m) =>
    m.content?.some((b) => b.toolUse !== undefined || b.toolResult !== undefined),
  );
  if ((chat.tools && chat.tools.length > 0) || usesTools) {
    const tools: Tool[] = (chat.tools ?? []).map(({ function: fn }) => ({
      toolSpec: {
        name: fn.name,
        ...(fn.description === undefined ? {} : { description: fn.description }),
        inputSchema: { json: { type: 'object', ...fn.parameters } },
      },
    }));
    // A conversation holding tool blocks needs a toolConfig even when no tool is offered any more.
    if (tools.length > 0) tools.push(CACHE_POINT);
    request.toolConfig = { tools };
    const choice = toolChoice(chat.tool_choice);
    if (choice !== undefined && (chat.tools?.length ?? 0) > 0) request.toolConfig.toolChoice = choice;
  }
  return request;
}

function userBlocks(content: unknown): ContentBlock[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) return [];
  const blocks: ContentBlock[] = [];
  for (const part of content as Record<string, unknown>[]) {
    if (part['type'] === 'text' && typeof part['text'] === 'string') {
      blocks.push({ text: part['text'] });
    } else if (part['type'] === 'image_url') {
      const url = (part['image_url'] as { url?: unknown } | undefined)?.url;
      // Converse takes image bytes only (or S3 locations): a data URL is sent, a web URL is not fetched here.
      const data =
        typeof url === 'string' ? /^data:image\/(png|jpeg|gif|webp);base64,(.*)$/s.exec(url) : null;
      if (data) {
        blocks.push({
          image: {
            format: data[1] as 'png' | 'jpeg' | 'gif' | 'webp',
            source: { bytes: Buffer.from(data[2] ?? '', 'base64') },
          },
        });
      } else if (typeof url === 'string') {
        blocks.push({ text: `[image: ${url}]` });
      }
    }
  }
  return blocks;
}

function assistantBlocks(message: ChatMessage & { role: 'assistant' }): ContentBlock[] {
  const blocks: ContentBlock[] = [...reasoningBlocks(message['provider_state'])];
  const text = textOf(message.content);
  if (text !== '') blocks.push({ text });
  for (const call of message.tool_calls ?? []) {
    blocks.push({
      toolUse: {
        toolUseId: call.id,
        name: call.function.name,
        input: argumentsObject(call.function.arguments) as NonNullable<ContentBlock['toolUse']>['input'],
      },
    });
  }
  return blocks;
}

/** The signed reasoning a Bedrock turn kept; nothing from another API's state or a malformed one. */
function reasoningBlocks(state: unknown): ContentBlock[] {
  if (typeof state !== 'object' || state === null) return [];
  const { api, reasoning } = state as { api?: unknown; reasoning?: unknown };
  if (api !== BEDROCK_API || !Array.isArray(reasoning)) return [];
  const blocks: ContentBlock[] = [];
  for (const kept of reasoning as Record<string, unknown>[]) {
    if (typeof kept['text'] === 'string') {
      blocks.push({
        reasoningContent: {
          reasoningText: {
            text: kept['text'],
            ...(typeof kept['signature'] === 'string' ? { signature: kept['signature'] } : {}),
          },
        },
      });
    } else if (typeof kept['redacted'] === 'string') {
      blocks.push({ reasoningContent: { redactedContent: Buffer.from(kept['redacted'], 'base64') } });
    }
  }
  return blocks;
}

/** Converse has no `none`: the tools stay offered and the choice is left to the model. */
function toolChoice(choice: ToolChoice | undefined): BedrockToolChoice | undefined {
  if (choice === undefined || choice === 'none') return undefined;
  if (choice === 'auto') return { auto: {} };
  if (choice === 'required') return { any: {} };
  return { tool: { name: choice.function.name } };
}
