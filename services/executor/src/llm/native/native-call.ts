/**
 * What every native-API adapter (Anthropic Messages, Gemini, OpenAI Responses) shares around its SDK: the
 * SDK's requests go through a `fetch` built on the executor's SSRF-guarded undici dispatcher (the endpoint
 * is checked before each attempt, every address its host resolves to inside the connection), each attempt
 * runs under an AttemptDeadline (the caller's abort, the attempt timeout, the idle timeout), and failed
 * attempts are retried by the executor's own policy (retry-policy.ts, Retry-After honoured) — the SDKs'
 * retries are always off — while nothing has been handed on yet. Errors carry no key: every text quoted
 * from an SDK error or an answer is scrubbed of it, and the SDK error is never kept as a cause.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { AttemptDeadline } from '../attempt-deadline.js';
import { AttemptFailure, excerpt } from '../attempt-failure.js';
import type { ChatResult, CompleteOptions } from '../chat-types.js';
import { LlmAbortedError, LlmResponseError, LlmUnavailableError } from '../errors.js';
import type { ModelCallOptions } from '../model-call-options.js';
import type { ModelEndpointGuard } from '../model-endpoint-guard.js';
import {
  DEFAULT_BACKOFF,
  isRetryableStatus,
  parseRetryAfter,
  waitBeforeRetry,
  type BackoffOptions,
} from '../retry-policy.js';

export interface NativeModelOptions extends ModelCallOptions {
  /** The API's base URL as the agent gives it (each adapter says what it appends). */
  baseUrl: string;
  /** From the task's vault only (`api_key_credential`). */
  apiKey?: string;
}

/** The last HTTP answer an attempt's fetch saw: where Retry-After is read from whatever the SDK throws. */
export interface SeenResponse {
  status?: number;
  retryAfter?: string;
  retryAfterMs?: string;
}

/** One attempt's tools: the signal to give the SDK, the fetch to give it, and the stream's heartbeat. */
export interface NativeAttempt {
  readonly signal: AbortSignal;
  readonly fetch: typeof globalThis.fetch;
  /** Call on every streamed event: restarts the idle clock. */
  touch(): void;
  /** Hands text on (and marks the call as having delivered, so it is not retried). */
  content(delta: string): void;
  reasoning(delta: string): void;
  /** Hands a piece of a tool call's arguments on (see CompleteOptions.onToolCallDelta). */
  toolCallDelta(delta: Parameters<NonNullable<CompleteOptions['onToolCallDelta']>>[0]): void;
  readonly backpressure: CompleteOptions['backpressure'];
}

/**
 * For a non-streamed answer fed through an adapter's stream accumulator: an attempt whose deltas are held,
 * then handed on by `flush` as one per kind (reasoning, text, each tool call whole), as a streamed answer
 * of one piece each would have been.
 */
export function wholeAnswer(attempt: NativeAttempt): { sink: NativeAttempt; flush(): void } {
  let content = '';
  let reasoning = '';
  const calls = new Map<number, { id?: string; name?: string; arguments: string }>();
  const sink: NativeAttempt = {
    signal: attempt.signal,
    fetch: attempt.fetch,
    touch: () => attempt.touch(),
    content: (delta) => (content += delta),
    reasoning: (delta) => (reasoning += delta),
    toolCallDelta: ({ index, id, name, arguments: args }) => {
      const call = calls.get(index) ?? { arguments: '' };
      if (id !== undefined) call.id = id;
      if (name !== undefined) call.name = name;
      call.arguments += args;
      calls.set(index, call);
    },
    backpressure: undefined,
  };
  const flush = (): void => {
    if (reasoning !== '') attempt.reasoning(reasoning);
    if (content !== '') attempt.content(content);
    for (const [index, call] of [...calls.entries()].sort(([a], [b]) => a - b)) {
      attempt.toolCallDelta({
        index,
        ...(call.id === undefined ? {} : { id: call.id }),
        ...(call.name === undefined ? {} : { name: call.name }),
        arguments: call.arguments,
      });
    }
  };
  return { sink, flush };
}

/** What an adapter's attempt returns; `attempts` is added by the runner. */
export type AttemptResult = Omit<ChatResult, 'attempts'>;

/** Classifies what an SDK threw (adapters add their API's in-stream error kinds). */
export type ErrorClassifier = (error: unknown) => AttemptFailure | undefined;

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

export class NativeCallRunner {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
  /** Whether the adapter asks for a streamed answer (`false`: the whole answer at once). */
  readonly stream: boolean;
  private readonly idleTimeoutMs: number | undefined;
  private readonly firstByteTimeoutMs: number | undefined;
  private readonly maxRetries: number;
  private readonly backoff: BackoffOptions;
  private readonly maxRetryAfterMs: number;
  private readonly endpointGuard: ModelEndpointGuard | undefined;
  private readonly dispatcher: Dispatcher | undefined;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;

  constructor(options: NativeModelOptions) {
    const url = new URL(options.baseUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(`baseUrl must be http(s), got ${url.protocol}`);
    }
    this.baseUrl = options.baseUrl;
    this.apiKey = options.apiKey || undefined;
    this.timeoutMs = positive('timeoutMs', options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.stream = options.stream ?? true;
    // A whole answer has no pieces to be idle between: only the attempt and first-byte clocks hold it.
    this.idleTimeoutMs =
      options.idleTimeoutMs === undefined || !this.stream
        ? undefined
        : positive('idleTimeoutMs', options.idleTimeoutMs);
    this.firstByteTimeoutMs =
      options.firstByteTimeoutMs === undefined
        ? undefined
        : positive('firstByteTimeoutMs', options.firstByteTimeoutMs);
    this.maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(this.maxRetries) || this.maxRetries < 0) {
      throw new RangeError(`maxRetries must be a non-negative integer, got ${options.maxRetries}`);
    }
    this.backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
    this.endpointGuard = options.endpointGuard;
    this.dispatcher = options.dispatcher ?? options.endpointGuard?.dispatcher;
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms, signal) => sleepFor(ms, undefined, { signal }));
    this.random = options.random ?? Math.random;
  }

  /** Servers and SDKs echo keys in their errors; nothing quoted from them may carry ours. */
  scrub(text: string): string {
    return this.apiKey ? text.replaceAll(this.apiKey, '[redacted]') : text;
  }

  /**
   * Runs `attempt` until it succeeds, fails for good, or the retries are spent; the same contract as
   * OpenAiChatClient.complete (LlmUnavailableError, LlmResponseError, LlmEndpointDeniedError, LlmAbortedError).
   */
  async run(
    options: CompleteOptions,
    attempt: (tools: NativeAttempt) => Promise<AttemptResult>,
    classify: ErrorClassifier,
  ): Promise<ChatResult> {
    const { signal } = options;
    let delivered = false;
    for (let attempts = 1; ; attempts++) {
      if (signal?.aborted) throw aborted(signal, attempts - 1);
      let failure: AttemptFailure;
      try {
        return {
          ...(await this.attempt(attempts, options, attempt, classify, () => (delivered = true))),
          attempts,
        };
      } catch (error) {
        if (signal?.aborted) throw aborted(signal, attempts);
        if (!(error instanceof AttemptFailure)) throw error;
        failure = error;
      }
      if (!failure.retryable) {
        throw new LlmResponseError(`model call failed: ${failure.reason}`, failure.detail(attempts));
      }
      if (delivered) {
        const reason = `the stream broke mid-response, after text was handed on, so it was not retried: ${failure.reason}`;
        throw new LlmUnavailableError(`model call failed: ${reason}`, failure.detail(attempts, reason));
      }
      if (attempts > this.maxRetries) {
        throw new LlmUnavailableError(
          `model unavailable after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${failure.reason}`,
          failure.detail(attempts),
        );
      }
      await waitBeforeRetry({
        retry: attempts,
        retryAfterMs: failure.retryAfterMs,
        backoff: this.backoff,
        maxRetryAfterMs: this.maxRetryAfterMs,
        random: this.random,
        signal,
        attempts,
        sleep: this.sleep,
      });
    }
  }

  private async attempt(
    attempts: number,
    options: CompleteOptions,
    attempt: (tools: NativeAttempt) => Promise<AttemptResult>,
    classify: ErrorClassifier,
    markDelivered: () => void,
  ): Promise<AttemptResult> {
    this.endpointGuard?.check(new URL(this.baseUrl), attempts - 1);
    const { signal } = options;
    const deadline = new AttemptDeadline(signal, this.timeoutMs, this.idleTimeoutMs, this.firstByteTimeoutMs);
    const seen: SeenResponse = {};
    const dispatcher = this.dispatcher;
    const guardedFetch = (async (input: string | URL | Request, init?: RequestInit) => {
      const response = await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
        ...(init as Parameters<typeof undiciFetch>[1]),
        ...(dispatcher ? { dispatcher } : {}),
      });
      seen.status = response.status;
      const retryAfter = response.headers.get('retry-after');
      const retryAfterMs = response.headers.get('retry-after-ms');
      if (retryAfter !== null) seen.retryAfter = retryAfter;
      if (retryAfterMs !== null) seen.retryAfterMs = retryAfterMs;
      deadline.touch();
      return response;
    }) as unknown as typeof globalThis.fetch;
    // After an abort, text already parsed is not handed on: silence.
    const live = (): boolean => !signal?.aborted && !deadline.signal.aborted;
    const tools: NativeAttempt = {
      signal: deadline.signal,
      fetch: guardedFetch,
      touch: () => deadline.touch(),
      content: (delta) => {
        if (!delta || !live()) return;
        markDelivered();
        options.onContentDelta?.(delta);
      },
      reasoning: (delta) => {
        if (!delta || !live()) return;
        markDelivered();
        options.onReasoningDelta?.(delta);
      },
      toolCallDelta: (delta) => {
        // Only a caller that takes the pieces makes the call unretryable (a retry would repeat them).
        if (options.onToolCallDelta === undefined || !live()) return;
        if (delta.arguments === '' && delta.id === undefined && delta.name === undefined) return;
        markDelivered();
        options.onToolCallDelta(delta);
      },
      backpressure: options.backpressure,
    };
    try {
      const result = await attempt(tools);
      // Some SDKs end a stream quietly when its signal aborts: an aborted attempt never counts as an answer.
      if (deadline.signal.aborted) throw this.failure(new Error('aborted'), deadline, seen, classify);
      return result;
    } catch (error) {
      if (error instanceof AttemptFailure) throw error;
      const denied = this.endpointGuard?.denial(error, attempts - 1);
      if (denied !== undefined) throw denied;
      throw this.failure(error, deadline, seen, classify);
    } finally {
      deadline.dispose();
    }
  }

  private failure(
    error: unknown,
    deadline: AttemptDeadline,
    seen: SeenResponse,
    classify: ErrorClassifier,
  ): AttemptFailure {
    if (deadline.timedOut !== undefined) {
      return new AttemptFailure({ retryable: true, reason: `timed out: ${deadline.timedOut}` });
    }
    const retryAfterMs = parseRetryAfter(seen, this.now());
    const classified = classify(error);
    if (classified !== undefined) {
      if (classified.retryAfterMs !== undefined || retryAfterMs === undefined || !classified.retryable) {
        return classified;
      }
      return new AttemptFailure({
        retryable: true,
        reason: classified.reason,
        ...(classified.status === undefined ? {} : { status: classified.status }),
        ...(classified.body === undefined ? {} : { body: classified.body }),
        retryAfterMs,
      });
    }
    const status = statusOf(error);
    const message = this.scrub(errorText(error));
    if (status !== undefined) {
      const retryable = isRetryableStatus(status);
      return new AttemptFailure({
        retryable,
        reason: `HTTP ${status}: ${excerpt(message, 200)}`,
        status,
        body: excerpt(message),
        ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
      });
    }
    if (isConnectionError(error)) {
      return new AttemptFailure({ retryable: true, reason: `connection failed: ${excerpt(message, 200)}` });
    }
    return new AttemptFailure({ retryable: false, reason: `malformed answer: ${excerpt(message, 200)}` });
  }
}

/** The HTTP status an SDK error names, if any. */
export function statusOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const status = (error as { status?: unknown }).status;
  return typeof status === 'number' && Number.isInteger(status) && status >= 100 ? status : undefined;
}

/** `Name: message (cause)`, for an error's reason. */
export function errorText(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.name}: ${error.cause.message})` : '';
  return `${error.name}: ${error.message}${cause}`;
}

/** Refused, reset or dropped connections, as the SDKs and undici name them. */
function isConnectionError(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (
      /Connection|Socket|terminated|fetch failed|ECONN|EPIPE|UND_ERR/i.test(
        `${current.name} ${current.message}`,
      )
    ) {
      return true;
    }
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^(E[A-Z]+|UND_ERR)/.test(code)) return true;
    current = current.cause;
  }
  return false;
}

function aborted(signal: AbortSignal, attempts: number): LlmAbortedError {
  return new LlmAbortedError(signal.reason, attempts, { cause: signal.reason });
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new RangeError(`${name} must be a positive number`);
  return value;
}

/** Parses a tool call's JSON arguments into the object a native API wants; `{}` when they are not an object. */
export function argumentsObject(text: string): Record<string, unknown> {
  if (text.trim() === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

/** Text of a protocol message's content: a string, or the text parts of an array. */
export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  let text = '';
  for (const part of content) {
    if (typeof part === 'object' && part !== null && (part as { type?: unknown }).type === 'text') {
      const value = (part as { text?: unknown }).text;
      if (typeof value === 'string') text += value;
    }
  }
  return text;
}
