/**
 * Chooses the model adapter for a task's model config by its `api`: the OpenAI-compatible chat
 * completions client (the fast path, shaped by `provider`) for `openai-chat` or none, else the native
 * adapter of that API. Every adapter takes the same options: the key from the task's vault, the
 * executor's endpoint guard and retry count.
 */
import { MODEL_APIS, type ModelApi } from '@agentmesh/protocol';
import { AnthropicMessagesModel } from './anthropic-messages/anthropic-messages-model.js';
import { BedrockConverseModel } from './bedrock-converse/bedrock-converse-model.js';
import type { ChatRequest, ChatResult, CompleteOptions } from './chat-types.js';
import { GeminiModel } from './gemini/gemini-model.js';
import type { ModelEndpointGuard } from './model-endpoint-guard.js';
import { OpenAiChatClient } from './openai-chat-client.js';
import { PROVIDER_PROFILES, profileOf } from './openai-compatible/profiles/provider-profiles.js';
import { OpenAiResponsesModel } from './openai-responses/openai-responses-model.js';

/** What every adapter is to the loop. */
export interface ModelAdapter {
  complete(request: ChatRequest, options?: CompleteOptions): Promise<ChatResult>;
}

export interface ModelAdapterOptions {
  /** The model config's `api`; absent: `openai-chat`. Must be known (see {@link isKnownApi}). */
  api?: string | undefined;
  /** The OpenAI-compatible profile (`openai-chat` only). */
  provider: string;
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  /** Longest wait for the answer's first byte (response headers). */
  firstByteTimeoutMs?: number;
  /** Longest silence inside a streamed answer. */
  idleTimeoutMs?: number;
  maxRetries?: number;
  /** The model config's `stream`; `false` asks for the whole answer at once. Default: streamed. */
  stream?: boolean;
  endpointGuard?: ModelEndpointGuard;
}

export function isKnownApi(api: string | undefined): api is ModelApi | undefined {
  return api === undefined || (MODEL_APIS as readonly string[]).includes(api);
}

export function createModelAdapter({ api, provider, ...options }: ModelAdapterOptions): ModelAdapter {
  const common = {
    baseUrl: options.baseUrl,
    timeoutMs: options.timeoutMs,
    ...(options.firstByteTimeoutMs === undefined ? {} : { firstByteTimeoutMs: options.firstByteTimeoutMs }),
    ...(options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: options.idleTimeoutMs }),
    ...(options.apiKey ? { apiKey: options.apiKey } : {}),
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.stream === undefined ? {} : { stream: options.stream }),
    ...(options.endpointGuard === undefined ? {} : { endpointGuard: options.endpointGuard }),
  };
  switch (api ?? 'openai-chat') {
    case 'openai-chat':
      return new OpenAiChatClient({ ...common, profile: profileOf(provider) ?? PROVIDER_PROFILES.generic });
    case 'anthropic-messages':
      return new AnthropicMessagesModel(common);
    case 'gemini':
      return new GeminiModel(common);
    case 'openai-responses':
      return new OpenAiResponsesModel(common);
    case 'bedrock-converse':
      return new BedrockConverseModel(common);
    default:
      throw new RangeError(`unknown model api "${api}"`);
  }
}
