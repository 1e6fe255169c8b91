/**
 * The HTTP edge of the client: builds gateway URLs, sends requests with the caller's credentials, and
 * turns what comes back into either a value that passed its protocol schema or one of the client's
 * errors. Nothing outside this module touches `fetch` results unvalidated.
 */
import { ErrorBody } from '@agentmesh/protocol';
import type { z } from 'zod';
import { MeshApiError, MeshProtocolError, MeshUnreachableError, type MeshClientError } from './errors.js';

export interface GatewayHttpOptions {
  /** Where the gateway listens, e.g. `http://127.0.0.1:8080` (a path prefix is kept). */
  baseUrl: string | URL;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Sent with every request (e.g. `x-account-id` for an admin key). */
  headers?: Record<string, string>;
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
}

export interface SendOptions {
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** Statuses a proxy or load balancer answers when the gateway behind it is down. */
const GATEWAY_DOWN_STATUSES = new Set([502, 503, 504]);
const SNIPPET_LENGTH = 200;

export class GatewayHttp {
  private readonly base: URL;
  private readonly fetch: typeof fetch;
  private readonly headers: Record<string, string>;

  constructor(options: GatewayHttpOptions) {
    const base = new URL(options.baseUrl);
    if (!base.pathname.endsWith('/')) base.pathname += '/';
    this.base = base;
    this.fetch = options.fetch ?? globalThis.fetch;
    this.headers = {
      ...options.headers,
      ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
    };
  }

  /** The gateway's address for messages: no credentials, even when the base URL carried some. */
  get origin(): string {
    return this.base.origin;
  }

  /** Sends a request; a gateway that cannot be reached is a {@link MeshUnreachableError}. */
  async send(method: string, path: string, options: SendOptions = {}): Promise<Response> {
    const url = new URL(path, this.base);
    const hasBody = options.body !== undefined;
    try {
      return await this.fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          ...this.headers,
          ...(hasBody ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
        ...(hasBody ? { body: JSON.stringify(options.body) } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (error) {
      // An abort is the caller's decision, not a failure of the gateway.
      if (options.signal?.aborted) throw options.signal.reason;
      throw new MeshUnreachableError(`cannot reach the gateway at ${this.origin} (${method} /${path})`, {
        cause: error,
      });
    }
  }

  /** A 2xx answer's JSON, validated against `schema`; any other answer as the matching error. */
  async json<S extends z.ZodType>(response: Response, schema: S, what: string): Promise<z.output<S>> {
    if (!response.ok) throw await this.failure(response, what);
    const body = await this.readJson(response, what);
    const parsed = schema.safeParse(body);
    if (!parsed.success) throw MeshProtocolError.fromZod(what, parsed.error);
    return parsed.data;
  }

  /** A non-2xx answer as an error: the gateway's error body, or why there was none. */
  async failure(response: Response, what: string): Promise<MeshClientError> {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      return new MeshUnreachableError(`the gateway at ${this.origin} broke off ${what}`, { cause: error });
    }
    const body = ErrorBody.safeParse(parseJsonOrUndefined(text));
    if (body.success) return new MeshApiError(response.status, body.data);
    const snippet = JSON.stringify(text.slice(0, SNIPPET_LENGTH));
    if (GATEWAY_DOWN_STATUSES.has(response.status)) {
      return new MeshUnreachableError(
        `${what}: HTTP ${response.status} without the gateway's error body (a proxy in front of a gateway that is down?): ${snippet}`,
      );
    }
    return new MeshProtocolError(
      `${what}: HTTP ${response.status} without an error body {code, message}: ${snippet}`,
      undefined,
      body.error ? { cause: body.error } : undefined,
    );
  }

  private async readJson(response: Response, what: string): Promise<unknown> {
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw new MeshUnreachableError(`the gateway at ${this.origin} broke off ${what}`, { cause: error });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw new MeshProtocolError(
        `${what} is not JSON: ${JSON.stringify(text.slice(0, SNIPPET_LENGTH))}`,
        undefined,
        { cause: error },
      );
    }
  }
}

function parseJsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
