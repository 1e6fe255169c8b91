// Seed 000 "blind execution": runs any HTTP tool from its definition alone. Builds the request from the
// model's arguments (by the tool's OpenAPI `request_template` when it was imported from a document, else by
// seed 000 placement), adds the task's values the tool asks for (`context_params`) and credentials from the
// task's vault, sends it through the guarded client, and
// hands back the API's answer (or a coded failure) with every secret scrubbed out.
//
// Arguments are not validated here: the loop calls `validateToolArguments` first.
import type { ClearVault, HttpTool } from '@agentmesh/protocol';
import { resolveAuth, withAuth, type OAuth2Client, type ResolvedAuth } from './auth.js';
import { GuardedHttpClient, type GuardedHttpClientOptions } from './guarded-http-client.js';
import { OAuth2TokenCache, type OAuth2TokenKey } from './oauth2-token-cache.js';
import { clientBasicCredential, requestOAuth2Token } from './oauth2-token-request.js';
import { withContextParams, type TaskContextValues } from './context-params.js';
import { buildHttpRequest } from './request-builder.js';
import type { HttpRequestPlan } from './request-plan.js';
import { SecretScrubber } from './secret-scrubber.js';
import type { ToolOutcome } from '../tool-outcome.js';

export interface HttpToolRunnerOptions extends GuardedHttpClientOptions {
  /** Share one cache between runners so tasks reuse tokens. A private cache by default. */
  readonly tokenCache?: OAuth2TokenCache;
}

export interface HttpToolRunContext {
  readonly vault: ClearVault;
  readonly signal?: AbortSignal;
  /** The task's scrubber, so what a call derives (Basic credential, tokens) is scrubbed task-wide. */
  readonly scrubber?: SecretScrubber;
  /** The task's user, account, trace and variables, for the tool's `context_params`; none are sent when absent. */
  readonly task?: TaskContextValues;
  /**
   * Sent as `Idempotency-Key` (`<trace_id>:<call_id>`, the same when a redelivered task runs the call
   * again), unless the request already has one: the tool's own header wins.
   */
  readonly idempotencyKey?: string;
}

export class HttpToolRunner {
  /** The guarded client this runner sends through (and closes); other runners may send through it too. */
  readonly client: GuardedHttpClient;
  readonly #tokenCache: OAuth2TokenCache;

  constructor(options: HttpToolRunnerOptions) {
    this.client = new GuardedHttpClient(options);
    this.#tokenCache = options.tokenCache ?? new OAuth2TokenCache();
  }

  run(
    tool: HttpTool,
    args: Readonly<Record<string, unknown>>,
    ctx: HttpToolRunContext,
  ): Promise<ToolOutcome> {
    const scrubber = ctx.scrubber ?? new SecretScrubber(Object.values(ctx.vault));
    return this.client.call(
      { toolName: tool.name, timeoutMs: tool.timeout_ms, signal: ctx.signal, scrubber },
      (signal) => this.#call(tool, args, ctx, signal, scrubber),
    );
  }

  /** Closes the runner's client (its own connection pool; not an injected dispatcher). */
  async close(): Promise<void> {
    await this.client.close();
  }

  async #call(
    tool: HttpTool,
    args: Readonly<Record<string, unknown>>,
    { vault, task, idempotencyKey }: HttpToolRunContext,
    signal: AbortSignal,
    scrubber: SecretScrubber,
  ): Promise<ToolOutcome> {
    // Context parameters go in before the credentials, so an auth header of the same name still wins.
    const plan = withIdempotencyKey(
      withContextParams(buildHttpRequest(tool.execution, args), tool.execution.context_params, task),
      idempotencyKey,
    );
    const auth = resolveAuth(tool.auth, vault);
    for (const secret of auth.derivedSecrets) scrubber.add(secret);
    if (auth.oauth2 === undefined) return this.client.exchange(withAuth(plan, auth), signal, scrubber);
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
    let response = await this.client.send(withAuth(plan, auth, token), signal);
    if (response.status === 401) {
      await response.body.dump();
      this.#tokenCache.invalidate(key, token);
      token = await this.#accessToken(key, client, signal, scrubber);
      response = await this.client.send(withAuth(plan, auth, token), signal);
    }
    return this.client.outcome(plan, response, scrubber);
  }

  async #accessToken(
    key: OAuth2TokenKey,
    client: OAuth2Client,
    signal: AbortSignal,
    scrubber: SecretScrubber,
  ): Promise<string> {
    // The fetch is shared with concurrent callers, so it runs on its own clock, not on this call's signal.
    const shared = this.#tokenCache.getToken(key, () =>
      requestOAuth2Token(this.client.transport, client, AbortSignal.timeout(this.client.defaultTimeoutMs)),
    );
    const token = await untilAborted(shared, signal);
    scrubber.add(token);
    return token;
  }
}

/** The plan with `Idempotency-Key` set, unless it has one already (from the tool's definition). */
function withIdempotencyKey(plan: HttpRequestPlan, key: string | undefined): HttpRequestPlan {
  if (key === undefined || plan.headers[IDEMPOTENCY_KEY_HEADER] !== undefined) return plan;
  return { ...plan, headers: { ...plan.headers, [IDEMPOTENCY_KEY_HEADER]: key } };
}

const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';

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
