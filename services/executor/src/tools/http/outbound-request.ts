// Sends a planned request through the outbound guard and follows redirects by hand, so that every hop is
// checked again and credentials never travel to another origin. 303 (and 301/302 after a POST) turn into a
// body-less GET as browsers do; 307/308 repeat the method and body.
import { STATUS_CODES } from 'node:http';
import { request, type Dispatcher } from 'undici';
import type { OutboundGuard } from './outbound-guard.js';
import type { HttpRequestPlan } from './request-plan.js';
import { OutboundRequestDeniedError, UpstreamRequestError } from '../tool-errors.js';

export interface OutboundTransport {
  readonly guard: OutboundGuard;
  readonly dispatcher: Dispatcher;
  readonly maxRedirects: number;
}

export interface OutboundResponse {
  readonly status: number;
  readonly headers: Dispatcher.ResponseData['headers'];
  readonly body: Dispatcher.ResponseData['body'];
  /** Where the answer came from, after redirects. */
  readonly url: URL;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const BODY_HEADERS = ['content-type', 'content-length'];

export async function sendOutbound(
  transport: OutboundTransport,
  plan: HttpRequestPlan,
  signal: AbortSignal,
  options: { followRedirects?: boolean } = {},
): Promise<OutboundResponse> {
  let current = plan;
  for (let hop = 0; ; hop += 1) {
    const response = await sendOnce(transport, current, signal);
    const location = singleHeader(response.headers.location);
    if (
      !REDIRECT_STATUSES.has(response.status) ||
      location === undefined ||
      options.followRedirects === false
    ) {
      return response;
    }
    await response.body.dump();
    if (hop >= transport.maxRedirects) {
      throw new UpstreamRequestError(
        `${describeTarget(plan)} redirected more than ${transport.maxRedirects} times; gave up`,
      );
    }
    current = redirectedPlan(current, response.status, resolveLocation(location, current.url));
  }
}

/** `HTTP 404 Not Found` */
export function statusLine(status: number): string {
  const text = STATUS_CODES[status];
  return text === undefined ? `HTTP ${status}` : `HTTP ${status} ${text}`;
}

/** `GET https://api.example.com/v1/items` — no query string, which may carry an API key. */
export function describeTarget(plan: Pick<HttpRequestPlan, 'method' | 'url'>): string {
  return `${plan.method} ${plan.url.origin}${plan.url.pathname}`;
}

async function sendOnce(
  transport: OutboundTransport,
  plan: HttpRequestPlan,
  signal: AbortSignal,
): Promise<OutboundResponse> {
  transport.guard.checkUrl(plan.url);
  try {
    const response = await request(plan.url, {
      method: plan.method,
      headers: plan.headers,
      body: plan.body,
      signal,
      dispatcher: transport.dispatcher,
    });
    return { status: response.statusCode, headers: response.headers, body: response.body, url: plan.url };
  } catch (error) {
    if (signal.aborted) throw error;
    const denied = findDenial(error);
    if (denied !== undefined) throw denied;
    throw new UpstreamRequestError(`${describeTarget(plan)} failed: ${describeNetworkError(error)}`, {
      cause: error,
    });
  }
}

function redirectedPlan(plan: HttpRequestPlan, status: number, target: URL): HttpRequestPlan {
  const becomesGet = status === 303 || ((status === 301 || status === 302) && plan.method === 'POST');
  const keepsBody = !becomesGet;
  const method = becomesGet ? 'GET' : plan.method;
  const headers = { ...plan.headers };
  const crossOrigin = target.origin !== plan.url.origin;
  if (crossOrigin) for (const name of plan.credentialHeaders) delete headers[name];
  if (!keepsBody) for (const name of BODY_HEADERS) delete headers[name];
  const credentialHeaders = crossOrigin ? new Set<string>() : plan.credentialHeaders;
  const next = { method, url: target, headers, credentialHeaders };
  return keepsBody && plan.body !== undefined ? { ...next, body: plan.body } : next;
}

function resolveLocation(location: string, base: URL): URL {
  try {
    return new URL(location, base);
  } catch (error) {
    throw new UpstreamRequestError(`the API redirected to an invalid location`, { cause: error });
  }
}

function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The guard's denial raised inside the socket's lookup, wherever undici wrapped it. */
export function findDenial(error: unknown): OutboundRequestDeniedError | undefined {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth += 1) {
    if (current instanceof OutboundRequestDeniedError) return current;
    current = current.cause;
  }
  return undefined;
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const inner = error instanceof AggregateError ? (error.errors[0] as unknown) : error.cause;
  const message = error.message || (inner instanceof Error ? inner.message : '') || 'connection failed';
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
}
