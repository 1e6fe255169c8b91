/**
 * Provider profiles: what differs between the OpenAI-compatible chat completions servers an agent's
 * model may name (`runtime_config.model.provider`). A profile is data; the few functions in
 * wire-request.ts apply it to the URL, the headers and the request body. Reading an answer is the same
 * for every profile (content part arrays, `reasoning_content`/`reasoning`, usage present or not), so a
 * server named wrongly, or `generic`, still reads whatever it sends; what a profile changes is what we
 * send, where a server would refuse (or mislead on) the generic request.
 *
 * Each rule names where it is documented (`source`); a provider with no documented difference from the
 * generic request has the generic profile under its own name, so that choosing it is never wrong.
 */
import { OPENAI_COMPATIBLE_PROVIDERS, type ModelProvider } from '@agentmesh/protocol';

export const ReasoningPassBack = {
  /** `reasoning_content` is left out of every assistant message sent (the server refuses or ignores it). */
  NEVER: 'never',
  /**
   * Every assistant message with tool calls carries the `reasoning_content` the model produced with it
   * (an empty string when it produced none); other assistant messages carry none.
   */
  TOOL_CALL_TURNS: 'tool_call_turns',
} as const;
export type ReasoningPassBack = (typeof ReasoningPassBack)[keyof typeof ReasoningPassBack];

export interface ProviderProfile {
  /** How the key is sent: `Authorization: Bearer <key>`, or Azure's `api-key: <key>`. */
  readonly auth: 'bearer' | 'api-key';
  /** Whether a streamed request asks for usage with `stream_options: {include_usage: true}`. */
  readonly streamUsage: boolean;
  /** The body field that carries the agent's `max_tokens`. */
  readonly maxTokensField: 'max_tokens' | 'max_completion_tokens';
  readonly reasoningPassBack: ReasoningPassBack;
  /**
   * Azure: the `api-version` query parameter added to a deployment URL that has none (the `/openai/v1`
   * API takes none). Undefined elsewhere: the base URL's query string is not kept.
   */
  readonly defaultApiVersion?: string;
  /** Where the profile's differences from `generic` are documented. */
  readonly source: string;
}

const generic: ProviderProfile = {
  auth: 'bearer',
  streamUsage: true,
  maxTokensField: 'max_tokens',
  reasoningPassBack: ReasoningPassBack.NEVER,
  source: 'OpenAI chat completions API reference (the request every compatible server takes)',
};

export const PROVIDER_PROFILES = {
  generic,
  openai: {
    ...generic,
    // `max_tokens` is deprecated and refused by the o-series reasoning models.
    maxTokensField: 'max_completion_tokens',
    source: 'platform.openai.com/docs/api-reference/chat/create (max_completion_tokens)',
  },
  'azure-openai': {
    ...generic,
    auth: 'api-key',
    maxTokensField: 'max_completion_tokens',
    // The latest GA data-plane inference version.
    defaultApiVersion: '2024-10-21',
    source:
      'learn.microsoft.com/azure/ai-services/openai/reference (api-key header, /openai/deployments/{id}/chat/completions?api-version=)',
  },
  deepseek: {
    ...generic,
    reasoningPassBack: ReasoningPassBack.TOOL_CALL_TURNS,
    source:
      'api-docs.deepseek.com/guides/thinking_mode (tool calls: reasoning_content must be passed back, else 400)',
  },
  'deepseek-r1': {
    ...generic,
    source:
      'api-docs.deepseek.com/guides/reasoning_model (deepseek-reasoner: reasoning_content in input messages gives 400)',
  },
  mistral: {
    ...generic,
    // Mistral refuses unknown request fields (422 extra_forbidden) and sends usage at the stream's end anyway.
    streamUsage: false,
    source:
      'docs.mistral.ai/api (no stream_options; extra fields are refused with 422); docs.mistral.ai reasoning (thinking content parts)',
  },
  groq: { ...generic, source: 'console.groq.com/docs/openai (generic request)' },
  xai: { ...generic, source: 'docs.x.ai (chat completions: generic request)' },
  together: { ...generic, source: 'docs.together.ai (generic request)' },
  fireworks: { ...generic, source: 'docs.fireworks.ai (generic request)' },
  vllm: { ...generic, source: 'docs.vllm.ai OpenAI-compatible server (generic request)' },
  ollama: { ...generic, source: 'docs.ollama.com/api/openai-compatibility (generic request)' },
  lmstudio: { ...generic, source: 'lmstudio.ai/docs OpenAI compatibility (generic request)' },
  openrouter: { ...generic, source: 'openrouter.ai/docs (generic request; `reasoning` deltas read)' },
} as const satisfies Record<ModelProvider, ProviderProfile>;

/** The profile a model config names; undefined for a provider this executor does not know. */
export function profileOf(provider: string): ProviderProfile | undefined {
  return isKnownProvider(provider) ? PROVIDER_PROFILES[provider] : undefined;
}

export function isKnownProvider(provider: string): provider is ModelProvider {
  return (OPENAI_COMPATIBLE_PROVIDERS as readonly string[]).includes(provider);
}
