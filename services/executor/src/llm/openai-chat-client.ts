/**
 * A client for OpenAI-compatible chat completions over undici. It asks for a stream (with usage, where
 * the provider's profile allows) unless told `stream: false` (then one whole `chat.completion`), hands text and reasoning on as they arrive, assembles
 * tool calls, and retries load and connection failures with jittered backoff — but only while nothing
 * has been handed on yet, since a retry after that would repeat text the caller has already passed
 * downstream. The provider's profile (openai-compatible/profiles/) shapes the URL, headers and body;
 * usage the server did not send is estimated (usage-estimate.ts) and marked so.
 */
import { setTimeout as sleepFor } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { AttemptDeadline } from './attempt-deadline.js';
import { AttemptFailure, transportFailure } from './attempt-failure.js';
import { readBufferedAnswer, readEventStream, type AnswerReading } from './answer-reader.js';
import type { ChatRequest, ChatResult, CompleteOptions } from './chat-types.js';
import { errorAnswerFailure } from './error-answer.js';
import { LlmAbortedError, LlmResponseError, LlmUnavailableError } from './errors.js';
import type { ModelCallOptions } from './model-call-options.js';
import type { ModelEndpointGuard } from './model-endpoint-guard.js';
import { DEFAULT_BACKOFF, waitBeforeRetry, type BackoffOptions } from './retry-policy.js';
import { MalformedChunkError, StreamAccumulator, type ChunkDeltas } from './stream-accumulator.js';
import { PROVIDER_PROFILES, type ProviderProfile } from './openai-compatible/profiles/provider-profiles.js';
import { completionsUrl, requestBody, requestHeaders } from './openai-compatible/profiles/wire-request.js';
import { estimateUsage } from './usage-estimate.js';

export interface OpenAiChatClientOptions extends ModelCallOptions {
  /** Up to and including the API version, e.g. `http://127.0.0.1:1234/v1`. */
  baseUrl: string;
  /** Sent only as `Authorization: Bearer <apiKey>` (Azure: `api-key: <apiKey>`). */
  apiKey?: string;
  /** The server's quirks (provider-profiles.ts); default the generic profile. */
  profile?: ProviderProfile;
}

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_RETRIES = 3;
const DEFAULT_MAX_RETRY_AFTER_MS = 60_000;

let sharedAgent: Agent | undefined;

/** Model calls are many and to few hosts: one pool of kept-alive connections serves them all. */
function sharedDispatcher(): Agent {
  sharedAgent ??= new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 300_000 });
  return sharedAgent;
}

export class OpenAiChatClient {
  private readonly url: string;
  private readonly profile: ProviderProfile;
  private readonly endpointGuard: ModelEndpointGuard | undefined;
  private readonly apiKey: string | undefined;
  private readonly timeoutMs: number;
  private readonly stream: boolean;
  private readonly idleTimeoutMs: number | undefined;
  private readonly firstByteTimeoutMs: number | undefined;
  private readonly maxRetries: number;
  private readonly backoff: BackoffOptions;
  private readonly maxRetryAfterMs: number;
  private readonly dispatcher: Dispatcher;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly random: () => number;

  constructor(options: OpenAiChatClientOptions) {
    this.profile = options.profile ?? PROVIDER_PROFILES.generic;
    this.url = completionsUrl(options.baseUrl, this.profile);
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
    positive('backoff.initialMs', this.backoff.initialMs);
    positive('backoff.maxMs', this.backoff.maxMs);
    if (!(this.backoff.multiplier >= 1)) {
      throw new RangeError(`backoff.multiplier must be at least 1, got ${this.backoff.multiplier}`);
    }
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
    if (!(this.maxRetryAfterMs >= 0)) throw new RangeError('maxRetryAfterMs must not be negative');
    this.endpointGuard = options.endpointGuard;
    this.dispatcher = options.dispatcher ?? options.endpointGuard?.dispatcher ?? sharedDispatcher();
    this.now = options.now ?? Date.now;
    this.sleep = options.sleep ?? ((ms, signal) => sleepFor(ms, undefined, { signal }));
    this.random = options.random ?? Math.random;
  }

  /**
   * One model turn. Resolves with the assistant's whole message; rejects with an LlmUnavailableError,
   * LlmResponseError, LlmEndpointDeniedError or LlmAbortedError (or with whatever a callback threw).
   */
  async complete(chatRequest: ChatRequest, options: CompleteOptions = {}): Promise<ChatResult> {
    const { signal } = options;
    const body = JSON.stringify(requestBody(chatRequest, this.profile, this.stream));
    let delivered = false;
    const emit = (deltas: ChunkDeltas): void => {
      // Text already parsed when the caller aborted is not handed on: after abort, silence.
      if (signal?.aborted) return;
      if (deltas.reasoning) {
        delivered = true;
        options.onReasoningDelta?.(deltas.reasoning);
      }
      if (deltas.content) {
        delivered = true;
        options.onContentDelta?.(deltas.content);
      }
      // Only a caller that takes the pieces makes a broken stream unretryable (a retry would repeat them).
      if (deltas.toolCalls && options.onToolCallDelta) {
        delivered = true;
        for (const piece of deltas.toolCalls) options.onToolCallDelta(piece);
      }
    };

    for (let attempts = 1; ; attempts++) {
      if (signal?.aborted) throw aborted(signal, attempts - 1);
      let failure: AttemptFailure;
      try {
        return { ...(await this.attempt(body, signal, emit, attempts, options.backpressure)), attempts };
      } catch (error) {
        if (signal?.aborted) throw aborted(signal, attempts);
        if (!(error instanceof AttemptFailure)) throw error;
        failure = error;
      }
      if (!failure.retryable) {
        throw new LlmResponseError(`model call failed: ${failure.reason}`, failure.detail(attempts), {
          cause: failure,
        });
      }
      if (delivered) {
        const reason = `the stream broke mid-response, after text was handed on, so it was not retried: ${failure.reason}`;
        throw new LlmUnavailableError(`model call failed: ${reason}`, failure.detail(attempts, reason), {
          cause: failure,
        });
      }
      if (attempts > this.maxRetries) {
        throw new LlmUnavailableError(
          `model unavailable after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${failure.reason}`,
          failure.detail(attempts),
          { cause: failure },
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
    body: string,
    signal: AbortSignal | undefined,
    emit: (deltas: ChunkDeltas) => void,
    attempts: number,
    backpressure: CompleteOptions['backpressure'],
  ): Promise<Omit<ChatResult, 'attempts'>> {
    // Each attempt: the verdict on a host name can change with its DNS answer; an IP literal never reaches DNS.
    this.endpointGuard?.check(new URL(this.url), attempts - 1);
    const deadline = new AttemptDeadline(signal, this.timeoutMs, this.idleTimeoutMs, this.firstByteTimeoutMs);
    const scrub = (text: string): string => this.scrub(text);
    try {
      let response: Dispatcher.ResponseData;
      try {
        response = await request(this.url, {
          method: 'POST',
          dispatcher: this.dispatcher,
          headers: requestHeaders(this.profile, this.apiKey, this.stream),
          body,
          signal: deadline.signal,
          // Our own clock governs; undici's defaults (300 s) must not cut in before it.
          headersTimeout: this.timeoutMs,
          bodyTimeout: this.idleTimeoutMs ?? this.timeoutMs,
        });
      } catch (error) {
        const denied = this.endpointGuard?.denial(error, attempts - 1);
        if (denied !== undefined) throw denied;
        throw transportFailure(error, deadline.timedOut, 'request', scrub);
      }
      deadline.touch();
      if (response.statusCode < 200 || response.statusCode >= 300) {
        throw await errorAnswerFailure(response, this.now(), scrub);
      }
      const accumulator = new StreamAccumulator();
      const reading: AnswerReading = {
        accumulator,
        deadline,
        emit,
        scrub,
        ...(backpressure === undefined ? {} : { backpressure }),
      };
      const contentType = String(response.headers['content-type'] ?? '').toLowerCase();
      if (contentType.includes('text/event-stream')) await readEventStream(response.body, reading);
      else await readBufferedAnswer(response.body, reading);
      return assemble(accumulator, response.statusCode, body.length);
    } finally {
      deadline.dispose();
    }
  }

  /** Servers echo keys in their errors; nothing quoted from them may carry ours. */
  private scrub(text: string): string {
    return this.apiKey ? text.replaceAll(this.apiKey, '[redacted]') : text;
  }
}

function assemble(
  accumulator: StreamAccumulator,
  status: number,
  requestChars: number,
): Omit<ChatResult, 'attempts'> {
  if (!accumulator.hasChoice) {
    throw new AttemptFailure({ retryable: false, reason: 'the answer has no choices', status });
  }
  try {
    const { usage, ...rest } = accumulator.result();
    if (usage !== undefined) return { ...rest, usage };
    return { ...rest, usage: estimateUsage(requestChars, rest.message), usageReported: false };
  } catch (error) {
    if (!(error instanceof MalformedChunkError)) throw error;
    throw new AttemptFailure({
      retryable: false,
      reason: `malformed answer: ${error.message}`,
      status,
      cause: error,
    });
  }
}

function aborted(signal: AbortSignal, attempts: number): LlmAbortedError {
  return new LlmAbortedError(signal.reason, attempts, { cause: signal.reason });
}

function positive(name: string, value: number): number {
  if (!(Number.isFinite(value) && value > 0)) throw new RangeError(`${name} must be a positive number`);
  return value;
}
