/**
 * JSON over HTTP to one upstream service through an undici connection pool: every attempt bounded in time,
 * the caller's trace context injected (`traceparent`), one client span per call, and retries with jittered
 * exponential backoff for idempotent calls only, each attempt metered. Every failure becomes an {@link UpstreamUnavailableError}
 * that says what happened (time-out, connection, status, unreadable answer) with an excerpt of the answer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { Pool, type Dispatcher } from 'undici';
import { UpstreamFailure, UpstreamUnavailableError, type UpstreamFailureDetail } from '../recall-errors.js';
import type { RecallMetrics } from '../recall-metrics.js';
import { backoffDelayMs } from './backoff.js';

export interface UpstreamClientOptions {
  /** Upstream name for errors, spans and logs, e.g. `ontology-query`. */
  name: string;
  /** Base URL; its path (if any) prefixes every request path. */
  baseUrl: string;
  timeoutMs: number;
  /** Extra attempts for idempotent requests. */
  retries: number;
  /** Sockets kept open to the upstream. */
  connections?: number;
  /** Counts and times every attempt. */
  metrics?: RecallMetrics;
}

export interface UpstreamRequest {
  method: 'GET' | 'POST';
  /** Path below the base URL, already percent-encoded. */
  path: string;
  headers: Record<string, string>;
  /** Sent as JSON. */
  body?: unknown;
  /** Only idempotent requests are sent again after a transient failure. */
  idempotent: boolean;
}

/** Answers larger than this are refused: a tool detail or an action list is far smaller. */
const MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
const EXCERPT_CHARS = 512;
const tracer = trace.getTracer('recall');

export class UpstreamClient {
  readonly name: string;
  readonly #pool: Pool;
  readonly #pathPrefix: string;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #metrics: RecallMetrics | undefined;

  constructor(options: UpstreamClientOptions) {
    const base = new URL(options.baseUrl);
    this.name = options.name;
    this.#pathPrefix = base.pathname.replace(/\/+$/, '');
    this.#timeoutMs = options.timeoutMs;
    this.#retries = options.retries;
    this.#metrics = options.metrics;
    this.#pool = new Pool(base.origin, {
      connections: options.connections ?? 32,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      connect: { timeout: options.timeoutMs },
    });
  }

  /** The upstream's JSON answer to a 2xx, or an {@link UpstreamUnavailableError}. */
  async requestJson(request: UpstreamRequest): Promise<unknown> {
    const target = `${request.method} ${this.#pathPrefix}${request.path}`;
    return tracer.startActiveSpan(
      `${this.name} ${request.method}`,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          'http.request.method': request.method,
          'server.address': this.name,
          'url.path': `${this.#pathPrefix}${request.path}`,
        },
      },
      async (span) => {
        try {
          const answer = await this.#withRetries(request, target, span);
          span.setStatus({ code: SpanStatusCode.OK });
          return answer;
        } catch (error) {
          span.recordException(error instanceof Error ? error : new Error(String(error)));
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
          throw error;
        } finally {
          span.end();
        }
      },
    );
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  async #withRetries(request: UpstreamRequest, target: string, span: Span): Promise<unknown> {
    const maxAttempts = request.idempotent ? this.#retries + 1 : 1;
    for (let attempt = 1; ; attempt += 1) {
      try {
        span.setAttribute('http.request.resend_count', attempt - 1);
        return await this.#meteredAttempt(request, target, attempt);
      } catch (error) {
        if (!(error instanceof UpstreamUnavailableError) || !error.transient || attempt >= maxAttempts)
          throw error;
        span.addEvent('retry', { attempt, reason: error.detail.reason });
        await sleep(backoffDelayMs(attempt));
      }
    }
  }

  async #meteredAttempt(request: UpstreamRequest, target: string, attempt: number): Promise<unknown> {
    const ended = this.#metrics?.upstreamCall(this.name);
    try {
      const answer = await this.#attempt(request, target, attempt);
      ended?.();
      return answer;
    } catch (error) {
      ended?.(error instanceof UpstreamUnavailableError ? error.detail : 'error');
      throw error;
    }
  }

  async #attempt(request: UpstreamRequest, target: string, attempt: number): Promise<unknown> {
    const headers: Record<string, string> = { accept: 'application/json', ...request.headers };
    propagation.inject(context.active(), headers);
    let payload: string | undefined;
    if (request.body !== undefined) {
      payload = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    const signal = AbortSignal.timeout(this.#timeoutMs);
    const fail = (
      reason: UpstreamFailure,
      message: string,
      extra: Partial<UpstreamFailureDetail> = {},
      cause?: unknown,
    ) =>
      new UpstreamUnavailableError(
        `${this.name}: ${message}`,
        { upstream: this.name, request: target, reason, attempts: attempt, ...extra },
        cause === undefined ? undefined : { cause },
      );

    let status: number;
    let text: string;
    try {
      const response = await this.#pool.request({
        method: request.method,
        path: `${this.#pathPrefix}${request.path}`,
        headers,
        body: payload ?? null,
        signal,
      });
      status = response.statusCode;
      trace.getActiveSpan()?.setAttribute('http.response.status_code', status);
      text = await readText(response.body);
    } catch (error) {
      if (error instanceof ResponseTooLargeError) {
        throw fail(UpstreamFailure.UNEXPECTED_SHAPE, error.message, {}, error);
      }
      if (signal.aborted || isTimeout(error)) {
        throw fail(UpstreamFailure.TIMEOUT, `no answer within ${this.#timeoutMs} ms`, {}, error);
      }
      throw fail(UpstreamFailure.CONNECTION, `request failed: ${describeNetworkError(error)}`, {}, error);
    }

    const excerpt = text.slice(0, EXCERPT_CHARS);
    if (status < 200 || status > 299) {
      throw fail(UpstreamFailure.STATUS, `answered HTTP ${status}`, { status, body_excerpt: excerpt });
    }
    try {
      return JSON.parse(text) as unknown;
    } catch (error) {
      throw fail(
        UpstreamFailure.MALFORMED_JSON,
        'answered with malformed JSON',
        { status, body_excerpt: excerpt },
        error,
      );
    }
  }
}

class ResponseTooLargeError extends Error {
  constructor() {
    super(`answered with more than ${MAX_RESPONSE_BYTES} bytes`);
    this.name = 'ResponseTooLargeError';
  }
}

async function readText(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_RESPONSE_BYTES) {
      body.destroy();
      throw new ResponseTooLargeError();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

function isTimeout(error: unknown): boolean {
  if (error instanceof Error && error.name === 'TimeoutError') return true;
  return TIMEOUT_CODES.has((error as NodeJS.ErrnoException | undefined)?.code ?? '');
}

function describeNetworkError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const inner = error instanceof AggregateError ? (error.errors[0] as unknown) : error.cause;
  const code = (error as NodeJS.ErrnoException).code ?? (inner as NodeJS.ErrnoException | undefined)?.code;
  const message = error.message || (inner instanceof Error ? inner.message : '') || 'connection failed';
  return code !== undefined && !message.includes(code) ? `${message} (${code})` : message;
}
