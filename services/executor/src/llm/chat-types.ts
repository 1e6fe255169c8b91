/**
 * What the model client takes and gives: a chat request in the protocol's message format and the
 * assistant's complete answer, ready to append to the conversation.
 */
import type { ChatMessage, ChatToolCall, ModelTool, TokenUsage } from '@agentmesh/protocol';

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

export interface ChatRequest {
  model: string;
  messages: readonly ChatMessage[];
  /** Sent as `{type, function: {name, description, parameters}}` only. */
  tools?: readonly ModelTool[];
  temperature?: number;
  max_tokens?: number;
  tool_choice?: ToolChoice;
  parallel_tool_calls?: boolean;
  /**
   * Extended thinking's token budget (the model config's `thinking_budget_tokens`): Anthropic Messages and
   * Claude on Bedrock think with it; other APIs ignore it.
   */
  thinking_budget_tokens?: number;
}

export interface CompleteOptions {
  /** Aborts the request in flight and any wait between attempts. */
  signal?: AbortSignal;
  /** Each piece of answer text, in order, as it streams. */
  onContentDelta?: (delta: string) => void;
  /** Each piece of the model's reasoning (`reasoning_content` / `reasoning`), in order. */
  onReasoningDelta?: (delta: string) => void;
  /**
   * Each piece of a tool call's arguments (JSON text), in order, as the model streams them. `index` is the
   * call's position in the turn; `id` and `name` come on the first delta of a call when the API gives them
   * then (else on the first that has them). An API that gives a call's arguments whole sends them as one delta.
   */
  onToolCallDelta?: (delta: { index: number; id?: string; name?: string; arguments: string }) => void;
  /**
   * Asked after each piece of the stream is handed on: a promise means the receiver of the deltas is
   * backed up, and the stream is read on once it resolves (the model's server feels TCP backpressure).
   */
  backpressure?: () => Promise<void> | undefined;
}

/** A type alias, not an interface, so it fits the protocol's (open) ChatMessage and can join the conversation. */
export type AssistantReply = {
  role: 'assistant';
  /** null when the model said nothing (typically a tool-call-only step). */
  content: string | null;
  /** In the order the model produced them (their stream `index`). */
  tool_calls?: ChatToolCall[];
  reasoning_content?: string;
  /**
   * What a native API needs back with this turn, opaque to the loop and kept on the conversation's
   * assistant turn: Anthropic's signed thinking blocks, OpenAI Responses' (encrypted) reasoning items,
   * Gemini's thought signatures. Only the adapter of the API named in `api` reads it; the events do not
   * carry it, so a resumed task's earlier turns go back without it (each adapter says what it then sends).
   */
  provider_state?: ProviderState;
};

/** See {@link AssistantReply.provider_state}; each adapter checks the shape of what it reads back. */
export interface ProviderState {
  api: string;
  [field: string]: unknown;
}

/** `stop`, `length`, `tool_calls`, `content_filter`, or whatever else a server says; null if it said nothing. */
export type FinishReason = string | null;

export interface ChatResult {
  message: AssistantReply;
  finishReason: FinishReason;
  /** When `usageReported` is false, the client's estimate (see usage-estimate.ts). */
  usage: TokenUsage;
  /** False when the server sent no usage and `usage` is an estimate; absent or true: the server's figures. */
  usageReported?: boolean;
  /** The completion's `id`, when the server gave one. */
  responseId?: string;
  /** The model that answered, when the server named it (it may be more exact than the requested one). */
  responseModel?: string;
  /** HTTP attempts this result took (1 when the first one succeeded). */
  attempts: number;
  /**
   * Set by a model that chooses among several (model-choice/fallback-model.ts): the model that answered,
   * and its place in the agent's list when the list has more than one.
   */
  answeredBy?: { model: string; index?: number };
}
