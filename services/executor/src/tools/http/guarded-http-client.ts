// The one way tool calls reach the network: every request (seed 000 and OpenAPI HTTP tools, seed 004 dynamic
// tools, OAuth2 token fetches) goes through the outbound guard's pinned-DNS agent, within a time budget, and
// comes back as a ToolOutcome: the answer read up to a byte limit, or a coded failure, with secrets scrubbed.
//
// Cancellation: an abort of the caller's signal is returned as a CANCELLED outcome, not thrown; the loop
// decides what a cancelled task does next.
import { ErrorCode } from '@agentmesh/protocol';
import type { Dispatcher } from 'undici';
import { OutboundGuard, type OutboundGuardOptions } from './outbound-guard.js';
import {
  describeTarget,
  sendOutbound,
  statusLine,
  type OutboundResponse,
  type OutboundTransport,
} from './outbound-request.js';
import type { HttpRequestPlan } from './request-plan.js';
import { interpretBody, readBoundedBody, truncationMarker } from './response-reader.js';
import type { SecretScrubber } from './secret-scrubber.js';
import { ToolCallError } from '../tool-errors.js';
import { toolFailure, toolSuccess, type ToolOutcome } from '../tool-outcome.js';

export interface GuardedHttpClientOptions {
  readonly guard: OutboundGuardOptions;
  /** Bytes of a successful answer kept; the rest is cut off and marked. Default 64 KiB. */
  readonly maxResponseBytes?: number;
  /** Budget of a call whose tool sets no timeout, token fetch and redirects included. Default 30 s. */
  readonly defaultTimeoutMs?: number;
  /** Default 3. */
  readonly maxRedirects?: number;
  /**
   * Sends the requests instead of the guard's own pinned-DNS agent. It then has to do the guard's address
   * checks itself (`new OutboundGuard(options).createAgent()` does); URL checks still happen here.
   */
  readonly dispatcher?: Dispatcher;
}

/** One tool call as the client runs it. */
export interface GuardedCall {
  /** Names the tool in timeout and cancel messages. */
  readonly toolName: string;
  /** The tool's own budget; the client's default when absent. */
  readonly timeoutMs?: number;
  /** The task's signal (cancel). */
  readonly signal?: AbortSignal;
  /** Cleans every message and answer; runners add what they derive from secrets while working. */
  readonly scrubber: SecretScrubber;
}

/** How much of a failed answer's body the model gets to see. */
const ERROR_EXCERPT_BYTES = 2048;
/** How much of that excerpt also goes into the message itself. */
const MESSAGE_EXCERPT_CHARS = 300;

export class GuardedHttpClient {
  /** Guard, connection pool and redirect limit, for senders that need no outcome (OAuth2 token fetches). */
  readonly transport: OutboundTransport;
  readonly defaultTimeoutMs: number;
  readonly #ownsDispatcher: boolean;
  readonly #maxResponseBytes: number;

  constructor(options: GuardedHttpClientOptions) {
    const guard = new OutboundGuard(options.guard);
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.transport = {
      guard,
      dispatcher: options.dispatcher ?? guard.createAgent(),
      maxRedirects: options.maxRedirects ?? 3,
    };
    this.#maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
  }

  /**
   * Runs `work` within the call's time budget and turns what it throws into outcomes: cancel, timeout, or
   * the coded `ToolCallError` (scrubbed). Anything else is a bug and is thrown.
   */
  async call(call: GuardedCall, work: (signal: AbortSignal) => Promise<ToolOutcome>): Promise<ToolOutcome> {
    const timeoutMs = call.timeoutMs ?? this.defaultTimeoutMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal =
      call.signal === undefined ? timeout.signal : AbortSignal.any([call.signal, timeout.signal]);
    const { scrubber } = call;
    try {
      signal.throwIfAborted();
      return await work(signal);
    } catch (error) {
      if (call.signal?.aborted) {
        return toolFailure(ErrorCode.CANCELLED, `the call to ${call.toolName} was cancelled`);
      }
      if (timeout.signal.aborted) {
        return toolFailure(ErrorCode.TOOL_TIMEOUT, `${call.toolName} did not finish within ${timeoutMs} ms`);
      }
      if (error instanceof ToolCallError) {
        const detail = error.detail === undefined ? undefined : scrubber.scrubDeep(error.detail);
        return toolFailure(error.code, scrubber.scrub(error.message), detail);
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `plan` through the guard, following redirects; the response body is still to be read. */
  send(plan: HttpRequestPlan, signal: AbortSignal): Promise<OutboundResponse> {
    return sendOutbound(this.transport, plan, signal);
  }

  /** Sends `plan` and reads the answer into an outcome. */
  async exchange(plan: HttpRequestPlan, signal: AbortSignal, scrubber: SecretScrubber): Promise<ToolOutcome> {
    return this.outcome(plan, await this.send(plan, signal), scrubber);
  }

  /** A 2xx answer (bounded, JSON parsed) as success; anything else as TOOL_ERROR with a body excerpt. */
  async outcome(
    plan: HttpRequestPlan,
    response: OutboundResponse,
    scrubber: SecretScrubber,
  ): Promise<ToolOutcome> {
    const contentType = headerText(response.headers['content-type']);
    if (response.status >= 200 && response.status <= 299) {
      const { text, truncated } = await readBoundedBody(response.body, this.#maxResponseBytes);
      if (truncated)
        return toolSuccess(scrubber.scrubCut(text) + truncationMarker(this.#maxResponseBytes), true);
      return toolSuccess(scrubber.scrubDeep(interpretBody(text, contentType)));
    }
    const excerptLimit = Math.min(ERROR_EXCERPT_BYTES, this.#maxResponseBytes);
    const { text, truncated } = await readBoundedBody(response.body, excerptLimit);
    const excerpt = truncated ? `${scrubber.scrubCut(text)}…` : scrubber.scrub(text);
    const target = describeTarget({ method: plan.method, url: response.url });
    const shortExcerpt =
      excerpt.length > MESSAGE_EXCERPT_CHARS ? `${excerpt.slice(0, MESSAGE_EXCERPT_CHARS)}…` : excerpt;
    const message = `${statusLine(response.status)} from ${target}${shortExcerpt.trim() === '' ? '' : `: ${shortExcerpt}`}`;
    return toolFailure(ErrorCode.TOOL_ERROR, scrubber.scrub(message), {
      status: response.status,
      body: excerpt,
    });
  }

  /** Closes the client's own connection pool (not an injected dispatcher). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.transport.dispatcher.close();
  }
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
