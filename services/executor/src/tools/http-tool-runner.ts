// Seed 000 "blind execution": runs any HTTP tool from its definition alone. Builds the request from the
// model's arguments, adds credentials from the task's vault, sends it through the SSRF guard, and hands back
// the API's answer (or a coded failure) with every secret scrubbed out.
//
// Cancellation: an abort of `ctx.signal` is returned as a CANCELLED outcome, not thrown; the loop decides what
// a cancelled task does next. Arguments are not validated here: the loop calls `validateToolArguments` first.
import type { ClearVault, HttpTool } from '@agentmesh/protocol';
import { ErrorCode } from '@agentmesh/protocol';
import type { Dispatcher } from 'undici';
import { resolveAuth, withAuth, type OAuth2Client, type ResolvedAuth } from './auth.js';
import { OAuth2TokenCache, type OAuth2TokenKey } from './oauth2-token-cache.js';
import { clientBasicCredential, requestOAuth2Token } from './oauth2-token-request.js';
import { OutboundGuard, type OutboundGuardOptions } from './outbound-guard.js';
import {
  describeTarget,
  sendOutbound,
  statusLine,
  type OutboundResponse,
  type OutboundTransport,
} from './outbound-request.js';
import { buildHttpRequest, type HttpRequestPlan } from './request-builder.js';
import { interpretBody, readBoundedBody, truncationMarker } from './response-reader.js';
import { SecretScrubber } from './secret-scrubber.js';
import { ToolCallError } from './tool-errors.js';
import { toolFailure, toolSuccess, type ToolOutcome } from './tool-outcome.js';

export interface HttpToolRunnerOptions {
  readonly guard: OutboundGuardOptions;
  /** Bytes of a successful answer kept; the rest is cut off and marked. Default 64 KiB. */
  readonly maxResponseBytes?: number;
  /** Budget of a call whose tool sets no `timeout_ms`, token fetch and redirects included. Default 30 s. */
  readonly defaultTimeoutMs?: number;
  /** Default 3. */
  readonly maxRedirects?: number;
  /** Share one cache between runners so tasks reuse tokens. A private cache by default. */
  readonly tokenCache?: OAuth2TokenCache;
  /**
   * Sends the requests instead of the guard's own pinned-DNS agent. It then has to do the guard's address
   * checks itself (`new OutboundGuard(options).createAgent()` does); URL checks still happen here.
   */
  readonly dispatcher?: Dispatcher;
}

export interface HttpToolRunContext {
  readonly vault: ClearVault;
  readonly signal?: AbortSignal;
}

/** How much of a failed answer's body the model gets to see. */
const ERROR_EXCERPT_BYTES = 2048;
/** How much of that excerpt also goes into the message itself. */
const MESSAGE_EXCERPT_CHARS = 300;

export class HttpToolRunner {
  readonly #transport: OutboundTransport;
  readonly #ownsDispatcher: boolean;
  readonly #maxResponseBytes: number;
  readonly #defaultTimeoutMs: number;
  readonly #tokenCache: OAuth2TokenCache;

  constructor(options: HttpToolRunnerOptions) {
    const guard = new OutboundGuard(options.guard);
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#transport = {
      guard,
      dispatcher: options.dispatcher ?? guard.createAgent(),
      maxRedirects: options.maxRedirects ?? 3,
    };
    this.#maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
    this.#defaultTimeoutMs = options.defaultTimeoutMs ?? 30_000;
    this.#tokenCache = options.tokenCache ?? new OAuth2TokenCache();
  }

  async run(
    tool: HttpTool,
    args: Readonly<Record<string, unknown>>,
    ctx: HttpToolRunContext,
  ): Promise<ToolOutcome> {
    const scrubber = new SecretScrubber(Object.values(ctx.vault));
    const timeoutMs = tool.timeout_ms ?? this.#defaultTimeoutMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = ctx.signal === undefined ? timeout.signal : AbortSignal.any([ctx.signal, timeout.signal]);
    try {
      signal.throwIfAborted();
      return await this.#call(tool, args, ctx.vault, signal, scrubber);
    } catch (error) {
      if (ctx.signal?.aborted) {
        return toolFailure(ErrorCode.CANCELLED, `the call to ${tool.name} was cancelled`);
      }
      if (timeout.signal.aborted) {
        return toolFailure(ErrorCode.TOOL_TIMEOUT, `${tool.name} did not finish within ${timeoutMs} ms`);
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

  /** Closes the runner's own connection pool (not an injected dispatcher). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#transport.dispatcher.close();
  }

  async #call(
    tool: HttpTool,
    args: Readonly<Record<string, unknown>>,
    vault: ClearVault,
    signal: AbortSignal,
    scrubber: SecretScrubber,
  ): Promise<ToolOutcome> {
    const plan = buildHttpRequest(tool.execution, args);
    const auth = resolveAuth(tool.auth, vault);
    for (const secret of auth.derivedSecrets) scrubber.add(secret);
    if (auth.oauth2 === undefined) {
      const response = await sendOutbound(this.#transport, withAuth(plan, auth), signal);
      return this.#outcome(plan, response, scrubber);
    }
    return this.#callWithOAuth2(plan, auth, auth.oauth2, signal, scrubber);
  }

  /** Sends with a bearer token; a 401 means the token went stale: drop it, fetch a new one, try once more. */
  async #callWithOAuth2(
    plan: HttpRequestPlan,
    auth: ResolvedAuth,
    client: OAuth2Client,
    signal: AbortSignal,
    scrubber: SecretScrubber,
  ): Promise<ToolOutcome> {
    scrubber.add(clientBasicCredential(client));
    const key = tokenKey(client);
    let token = await this.#accessToken(key, client, signal, scrubber);
    let response = await sendOutbound(this.#transport, withAuth(plan, auth, token), signal);
    if (response.status === 401) {
      await response.body.dump();
      this.#tokenCache.invalidate(key, token);
      token = await this.#accessToken(key, client, signal, scrubber);
      response = await sendOutbound(this.#transport, withAuth(plan, auth, token), signal);
    }
    return this.#outcome(plan, response, scrubber);
  }

  async #accessToken(
    key: OAuth2TokenKey,
    client: OAuth2Client,
    signal: AbortSignal,
    scrubber: SecretScrubber,
  ): Promise<string> {
    // The fetch is shared with concurrent callers, so it runs on its own clock, not on this call's signal.
    const shared = this.#tokenCache.getToken(key, () =>
      requestOAuth2Token(this.#transport, client, AbortSignal.timeout(this.#defaultTimeoutMs)),
    );
    const token = await untilAborted(shared, signal);
    scrubber.add(token);
    return token;
  }

  async #outcome(
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
}

function tokenKey(client: OAuth2Client): OAuth2TokenKey {
  const { config } = client;
  return {
    tokenUrl: config.token_url,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    ...(config.scopes === undefined ? {} : { scopes: config.scopes }),
    ...(config.audience === undefined ? {} : { audience: config.audience }),
  };
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** `promise`, or a rejection as soon as `signal` aborts (the promise itself keeps running for others). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
