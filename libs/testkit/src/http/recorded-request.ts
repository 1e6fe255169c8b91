/**
 * An HTTP request as a test wants to look at it afterwards: method, path, parsed query, lowercased
 * headers, raw body text and the body parsed by its content type (JSON or form-urlencoded).
 */
import type { IncomingMessage } from 'node:http';
import { parse as parseQueryString, type ParsedUrlQuery } from 'node:querystring';

export type HeaderMap = Readonly<Record<string, string | string[]>>;
/** Parsed query or form: a repeated key keeps all its values as an array. */
export type QueryMap = Readonly<Record<string, string | string[]>>;

export interface RecordedRequest {
  method: string;
  /** Path without the query string, e.g. `/v1/users/42`. */
  path: string;
  query: QueryMap;
  /** Header names lowercased. */
  headers: HeaderMap;
  bodyText: string;
  /** JSON for `application/json` (and `+json`), a {@link QueryMap} for form-urlencoded, else undefined. */
  body: unknown;
  /** Why `body` is undefined although the content type promised JSON. */
  bodyParseError?: string;
  receivedAt: Date;
}

/** Reads the whole body; bodies beyond `maxBytes` are an error (tests never need them). */
export async function recordRequest(
  req: IncomingMessage,
  maxBytes = 10 * 1024 * 1024,
): Promise<RecordedRequest> {
  const receivedAt = new Date();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new RangeError(`request body larger than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  const bodyText = Buffer.concat(chunks).toString('utf8');
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  const recorded: RecordedRequest = {
    method: (req.method ?? 'GET').toUpperCase(),
    path: url.pathname,
    query: plainQuery(parseQueryString(url.search.slice(1))),
    headers: headerMap(req),
    bodyText,
    body: undefined,
    receivedAt,
  };
  const contentType = String(req.headers['content-type'] ?? '').toLowerCase();
  if (bodyText.length > 0 && isJson(contentType)) {
    try {
      recorded.body = JSON.parse(bodyText);
    } catch (error) {
      recorded.bodyParseError = error instanceof Error ? error.message : String(error);
    }
  } else if (contentType.startsWith('application/x-www-form-urlencoded')) {
    recorded.body = plainQuery(parseQueryString(bodyText));
  }
  return recorded;
}

function isJson(contentType: string): boolean {
  const mediaType = contentType.split(';')[0]?.trim() ?? '';
  return mediaType === 'application/json' || mediaType.endsWith('+json');
}

function headerMap(req: IncomingMessage): HeaderMap {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name.toLowerCase()] = value;
  }
  return headers;
}

/** `querystring.parse` returns a null-prototype object; tests compare with plain objects. */
function plainQuery(parsed: ParsedUrlQuery): QueryMap {
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(parsed)) {
    if (value !== undefined) query[key] = value;
  }
  return query;
}
