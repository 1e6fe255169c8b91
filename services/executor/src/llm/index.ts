/**
 * The executor's model client: OpenAI-compatible chat completions over undici, streamed, with
 * retries and cancellation. The loop imports from here only.
 */
export { OpenAiChatClient, type OpenAiChatClientOptions } from './openai-chat-client.js';
export {
  PROVIDER_PROFILES,
  ReasoningPassBack,
  isKnownProvider,
  profileOf,
  type ProviderProfile,
} from './openai-compatible/profiles/provider-profiles.js';
export { ModelEndpointGuard, type ModelEndpointGuardOptions } from './model-endpoint-guard.js';
export type {
  AssistantReply,
  ChatRequest,
  ChatResult,
  CompleteOptions,
  FinishReason,
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
