/**
 * What every model client takes besides its endpoint and key: the time budgets of an attempt, how often and
 * how long to retry, whether to stream, the SSRF guard its requests go through, and the clock and randomness
 * tests replace. The OpenAI-compatible client (openai-chat-client.ts) and the native adapters
 * (native/native-call.ts) extend it with what is theirs.
 */
import type { Dispatcher } from 'undici';
import type { ModelEndpointGuard } from './model-endpoint-guard.js';
import type { BackoffOptions } from './retry-policy.js';

export interface ModelCallOptions {
  /** Per attempt: connecting plus receiving the whole answer. Default 60 s. */
  timeoutMs?: number;
  /** Longest silence allowed between two pieces of a streamed answer. Default: only `timeoutMs` applies. */
  idleTimeoutMs?: number;
  /**
   * Longest wait for the response headers: a server that accepts the connection and sends nothing fails
   * the attempt (retryable) after this. Default: only `timeoutMs` applies.
   */
  firstByteTimeoutMs?: number;
  /** Attempts after the first. Default 3. */
  maxRetries?: number;
  /** `false`: ask for the whole answer at once (the model config's `stream`). Default: streamed. */
  stream?: boolean;
  /** Default `{initialMs: 500, maxMs: 8000, multiplier: 2}`. */
  backoff?: Partial<BackoffOptions>;
  /** A `Retry-After` longer than this is cut to it. Default 60 s. */
  maxRetryAfterMs?: number;
  /**
   * Checks the endpoint before each attempt and connects through its DNS-pinning agent, so a denied address
   * (private, loopback, link-local, metadata; not allow-listed) fails with LlmEndpointDeniedError before
   * anything, the key included, is sent. The executor always passes one; without it nothing is checked.
   */
  endpointGuard?: ModelEndpointGuard;
  /** Default: the endpoint guard's agent, else a keep-alive agent shared in the process. */
  dispatcher?: Dispatcher;
  /** Wall clock, for `Retry-After` dates. */
  now?: () => number;
  /** The wait between attempts; must reject when `signal` aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** In [0, 1), for the backoff jitter. */
  random?: () => number;
}
