// The one shape every request source (seed 000 placement, OpenAPI templates, dynamic tools) produces and
// the guarded sender consumes, with the checks all of them share: URL parsing and header name/value safety.
// Headers that route or frame the request are never taken from a value: a Host argument would send the
// request to another virtual host than the URL names (past the outbound guard's view), and Content-Length,
// Transfer-Encoding or Connection would let a value reshape the exchange on the wire.
import type { FormData } from 'undici';
import { scalarText } from './param-encoding.js';
import { InvalidToolArgumentsError, ProtectedHeaderError, ToolDefinitionError } from '../tool-errors.js';

/** A request ready to send. Header names are lower case. */
export interface HttpRequestPlan {
  /** Upper case (`GET`, `POST`, ...). */
  readonly method: string;
  readonly url: URL;
  readonly headers: Record<string, string>;
  /** Multipart bodies are `FormData`: undici writes them with their boundary in the content type. */
  readonly body?: string | Uint8Array | FormData;
  /** Headers that carry credentials: dropped when a redirect leaves the origin. */
  readonly credentialHeaders: Set<string>;
}

export const ACCEPT = 'application/json, text/plain;q=0.9, */*;q=0.8';

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const FORBIDDEN_IN_HEADER_VALUE = /[\r\n\0]/;

/** Hop-by-hop and framing headers (RFC 9110 §7.6.1, RFC 9112), plus Expect, which undici cannot send. */
const PROTECTED_HEADERS = new Set([
  'host',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'content-length',
  'expect',
  'http2-settings',
]);

export function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch (error) {
    throw new ToolDefinitionError(`the tool's URL does not parse once filled in`, { cause: error });
  }
}

/**
 * The lower-case header name of argument `name`; a name HTTP cannot carry is the definition's fault, a header
 * that routes or frames the request (see {@link PROTECTED_HEADERS}, and every `Proxy-*`) is refused.
 */
export function headerName(name: string): string {
  if (!HEADER_NAME.test(name))
    throw new ToolDefinitionError(`argument ${name} cannot be an HTTP header name`);
  const lower = name.toLowerCase();
  if (PROTECTED_HEADERS.has(lower) || lower.startsWith('proxy-')) throw new ProtectedHeaderError(name);
  return lower;
}

/** A cookie name as given (cookie names are case-sensitive); it has to be an HTTP token. */
export function cookieName(name: string): string {
  if (!HEADER_NAME.test(name)) throw new ToolDefinitionError(`argument ${name} cannot be a cookie name`);
  return name;
}

/** A header (or cookie) value; line breaks would smuggle headers in, so they are the model's mistake. */
export function headerValue(name: string, value: unknown): string {
  const text = scalarText(value);
  if (FORBIDDEN_IN_HEADER_VALUE.test(text)) {
    throw new InvalidToolArgumentsError(`argument ${name} must not contain line breaks or NUL characters`);
  }
  return text;
}
