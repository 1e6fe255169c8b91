/**
 * The executor's model adapters: OpenAI-compatible chat completions over undici (the fast path) and the
 * native APIs (Anthropic Messages, Gemini, OpenAI Responses, Bedrock Converse) through their official SDKs, all streamed,
 * with the executor's retries and cancellation, chosen by the model config's `api` (model-factory.ts).
 * The loop imports from here only.
 */
export { OpenAiChatClient, type OpenAiChatClientOptions } from './openai-chat-client.js';
export {
  PROVIDER_PROFILES,
  ReasoningPassBack,
  isKnownProvider,
  profileOf,
  type ProviderProfile,
} from './openai-compatible/profiles/provider-profiles.js';
export {
  createModelAdapter,
  isKnownApi,
  type ModelAdapter,
  type ModelAdapterOptions,
} from './model-factory.js';
export { AnthropicMessagesModel } from './anthropic-messages/anthropic-messages-model.js';
export { BedrockConverseModel } from './bedrock-converse/bedrock-converse-model.js';
export { GeminiModel } from './gemini/gemini-model.js';
export { OpenAiResponsesModel } from './openai-responses/openai-responses-model.js';
export type { NativeModelOptions } from './native/native-call.js';
export { ModelEndpointGuard, type ModelEndpointGuardOptions } from './model-endpoint-guard.js';
export type {
  AssistantReply,
  ChatRequest,
  ChatResult,
  CompleteOptions,
  FinishReason,
  ProviderState,
  ToolChoice,
} from './chat-types.js';
export {
  LlmAbortedError,
  LlmEndpointDeniedError,
  LlmError,
  LlmResponseError,
  LlmUnavailableError,
  type LlmErrorDetail,
} from './errors.js';
export type { BackoffOptions } from './retry-policy.js';
