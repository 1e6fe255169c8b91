/**
 * The script a scripted model follows: each step is either a reply (text, reasoning, tool calls) or
 * a fault (rate limit, server error, dropped connection, malformed JSON, hang). Steps are plain data
 * so a test reads as the conversation it stages.
 */
import type { RecordedRequest } from '../http/recorded-request.js';

export interface ScriptedToolCall {
  /** Function name the model calls. */
  name: string;
  /** An object is sent as its JSON; a string is sent verbatim (use it for invalid-JSON arguments). */
  arguments: Record<string, unknown> | string;
  /** Tool call id; default `call_<n>`. */
  id?: string;
}

export interface ModelUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens?: number;
}

interface StepTiming {
  /** Wait this long before answering at all (time to first byte). */
  latencyMs?: number;
}

/** A successful answer. Streamed in several deltas when the request has `stream: true`. */
export interface ModelReply extends StepTiming {
  content?: string;
  /** Streamed as `reasoning_content` deltas (and returned as `message.reasoning_content`). */
  reasoning?: string;
  /** Several calls in one step are parallel tool calls. */
  toolCalls?: ScriptedToolCall[];
  /** Default `tool_calls` when there are tool calls, else `stop`. */
  finishReason?: 'stop' | 'tool_calls' | 'length' | 'content_filter';
  /** Characters per streamed delta (text, reasoning and tool arguments). Default 4. */
  chunkSize?: number;
  /** Pause between streamed chunks. Default 0. */
  chunkDelayMs?: number;
  /**
   * Streaming only: after `afterChunks` chunks, the rest waits for `until` — so a test can see what left
   * the receiver before the model finished, without timing anything.
   */
  hold?: { afterChunks: number; until: Promise<unknown> };
  /** Default: estimated from the characters in and out (about 4 per token). */
  usage?: ModelUsage;
  /** Model name in the answer; default the requested model. */
  model?: string;
}

export const ModelFault = {
  rateLimit: 'rate_limit',
  serverError: 'server_error',
  dropConnection: 'drop_connection',
  malformedJson: 'malformed_json',
  hang: 'hang',
} as const;
export type ModelFaultKind = (typeof ModelFault)[keyof typeof ModelFault];

/** HTTP 429 with a `Retry-After` header. */
export interface RateLimitFault extends StepTiming {
  fault: 'rate_limit';
  /** Default 1. */
  retryAfterSeconds?: number;
  message?: string;
}

/** HTTP 500 (or another 5xx) with an OpenAI-style error body. */
export interface ServerErrorFault extends StepTiming {
  fault: 'server_error';
  /** Default 500. */
  status?: number;
  message?: string;
}

/**
 * The socket is destroyed. Without `partial`, before any byte of the answer; with it (streaming
 * requests), after the first `afterChunks` chunks of that reply (default all but the finishing ones).
 */
export interface DropConnectionFault extends StepTiming {
  fault: 'drop_connection';
  partial?: ModelReply;
  afterChunks?: number;
}

/** An answer whose JSON (the body, or an SSE `data:` line) does not parse. */
export interface MalformedJsonFault extends StepTiming {
  fault: 'malformed_json';
}

/** Never answers; the request ends only when the client gives up or the server stops. */
export interface HangFault extends StepTiming {
  fault: 'hang';
}

export type ModelFaultStep =
  RateLimitFault | ServerErrorFault | DropConnectionFault | MalformedJsonFault | HangFault;

/**
 * An answer written byte for byte as given: a recorded provider stream (SSE text) or body replayed
 * whatever shape it has. Each piece of `body` is one write, flushed before the next.
 */
export interface RawReply extends StepTiming {
  raw: {
    /** Default 200. */
    status?: number;
    /** Default `content-type: text/event-stream`. */
    headers?: Record<string, string>;
    /** Text, or bytes (a binary framing such as Amazon's `application/vnd.amazon.eventstream`), in pieces. */
    body: string | Uint8Array | readonly (string | Uint8Array)[];
  };
}

export type ModelStep = ModelReply | ModelFaultStep | RawReply;

export function isFault(step: ModelStep): step is ModelFaultStep {
  return 'fault' in step;
}

export function isRaw(step: ModelStep): step is RawReply {
  return 'raw' in step;
}

/**
 * SSE text of the given chunks, each as one `data:` event, then `data: [DONE]` unless `done` is false.
 * `eventField` names a field of each chunk whose value goes in an `event:` line before it (Anthropic's
 * and OpenAI Responses' streams name each event by its `type`).
 */
export function sseBody(
  chunks: readonly unknown[],
  { done = true, eventField }: { done?: boolean; eventField?: string } = {},
): string[] {
  const events = chunks.map((chunk) => {
    const name = eventField === undefined ? undefined : (chunk as Record<string, unknown>)[eventField];
    const head = typeof name === 'string' ? `event: ${name}\n` : '';
    return `${head}data: ${JSON.stringify(chunk)}\n\n`;
  });
  return done ? [...events, 'data: [DONE]\n\n'] : events;
}

/** One chat message as clients send it (OpenAI chat format; unknown fields kept). */
export interface ChatMessage {
  role: string;
  content?: unknown;
  name?: string;
  tool_call_id?: string;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  [field: string]: unknown;
}

export interface ChatRequestBody {
  model?: string;
  messages: ChatMessage[];
  stream?: boolean;
  tools?: unknown[];
  [field: string]: unknown;
}

/** A well-formed chat completion request, as a `respond` function sees it. */
export interface ChatCompletionRequest extends RecordedRequest {
  body: ChatRequestBody;
}

/** Chooses the answer from the conversation; `undefined` means "nothing to say" (HTTP 500). */
export type RespondFunction = (
  request: ChatCompletionRequest,
) => ModelStep | undefined | Promise<ModelStep | undefined>;

/** What the server did with a request, recorded beside it. */
export type ModelOutcome =
  | 'reply'
  | 'raw'
  | ModelFaultKind
  | 'script_exhausted'
  | 'respond_failed'
  | 'invalid_request'
  | 'unauthorized'
  | 'models'
  | 'not_found';
