/**
 * Turns a non-2xx answer into an attempt failure: retryable for 429/5xx (with the wait the server
 * asked for), final otherwise; the upstream's own error message and a short, scrubbed excerpt of
 * the body are kept for the error detail.
 */
import type { Dispatcher } from 'undici';
import { AttemptFailure, excerpt } from './attempt-failure.js';
import { isRetryableStatus, parseRetryAfter } from './retry-policy.js';

/** Enough of an error body to quote it; the rest is discarded. */
const MAX_ERROR_BODY_BYTES = 8 * 1024;
const MESSAGE_CHARS = 200;

export async function errorAnswerFailure(
  response: Dispatcher.ResponseData,
  nowMs: number,
  scrub: (text: string) => string,
): Promise<AttemptFailure> {
  const status = response.statusCode;
  const text = scrub(await readStart(response.body));
  const retryable = isRetryableStatus(status);
  const retryAfterMs = retryable
    ? parseRetryAfter(
        {
          retryAfter: firstHeader(response.headers['retry-after']),
          retryAfterMs: firstHeader(response.headers['retry-after-ms']),
        },
        nowMs,
      )
    : undefined;
  const message = upstreamMessage(text);
  // Redirects are not followed: the key would go wherever the answer points, past the endpoint guard's checks.
  const redirect =
    status >= 300 && status <= 399 ? ' (the model endpoint redirected; redirects are not followed)' : '';
  return new AttemptFailure({
    retryable,
    reason: (message ? `HTTP ${status}: ${excerpt(message, MESSAGE_CHARS)}` : `HTTP ${status}`) + redirect,
    status,
    ...(text === '' ? {} : { body: excerpt(text) }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
  });
}

/** The first bytes of the body; a body that breaks off is quoted as far as it came. */
async function readStart(body: Dispatcher.ResponseData['body']): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      parts.push(chunk);
      size += chunk.length;
      if (size >= MAX_ERROR_BODY_BYTES) break;
    }
  } catch {
    // The status already says what happened; the body is only a detail.
  }
  return Buffer.concat(parts).subarray(0, MAX_ERROR_BODY_BYTES).toString('utf8');
}

/** OpenAI-style `{"error": {"message"}}`, or `{"message"}` / `{"error": "..."}`; undefined for other bodies. */
function upstreamMessage(text: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const body = parsed as Record<string, unknown>;
  const error = body['error'];
  if (typeof error === 'string') return error;
  if (typeof error === 'object' && error !== null) {
    const message = (error as Record<string, unknown>)['message'];
    if (typeof message === 'string') return message;
  }
  return typeof body['message'] === 'string' ? body['message'] : undefined;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
