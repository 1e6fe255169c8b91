/**
 * Reading JSON request bodies, the same for HTTP and the NATS ingress: a body nested deeper than
 * {@link MAX_JSON_DEPTH} is refused from its text, before it is parsed. Everything downstream that
 * walks a body recursively (JSON.stringify at publish, the canonical JSON of idempotency digests and
 * vault bindings, schema validation) would otherwise overflow the stack on a body a few thousand levels
 * deep; the scan below never builds the structure and uses no recursion.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { InvalidRequest, NestedTooDeep } from './errors.js';

/**
 * The deepest nesting of objects and arrays a request body may have. A task request needs about ten
 * levels (a message's content parts, tool call arguments are strings); the rest is room for
 * `variables` and pre-assembled tool schemas.
 */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether JSON text opens more than `maxDepth` objects and arrays inside one another. Brackets inside
 * strings do not count (escapes respected). Malformed text gets an answer too; parsing rejects it later.
 */
export function jsonNestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === BACKSLASH) i++;
      else if (char === QUOTE) inString = false;
    } else if (char === QUOTE) {
      inString = true;
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > maxDepth) return true;
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** A body's JSON, or why it is refused. */
export function parseJsonBody(text: string): { value: unknown } | InvalidRequest | NestedTooDeep {
  if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) return new NestedTooDeep(MAX_JSON_DEPTH);
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    return new InvalidRequest('the request body is not valid JSON');
  }
}

/** Methods whose requests no route reads a body from. */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['DELETE', 'OPTIONS']);

/**
 * Makes JSON the one body type: replaces Fastify's `application/json` parser with one that checks the
 * depth first, then parses exactly as Fastify does (`__proto__` and `constructor.prototype` keys
 * refused), and drops its `text/plain` parser, so any other content type is 415.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  // A DELETE or OPTIONS declaring an empty body has none, whatever content type it names: Fastify would
  // hand it to that type's parser (an empty JSON body is 400, any other type 415). The Python MCP SDK
  // ends a session with exactly such a DELETE (`content-type: application/json`, `content-length: 0`).
  app.addHook('onRequest', async (request) => {
    if (BODYLESS_METHODS.has(request.method) && declaresNoBody(request.headers)) {
      delete request.headers['content-type'];
    }
  });
  const fastifyJsonParser = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    const text = body as string;
    if (text.length === 0) {
      done(new InvalidRequest('the request body is empty; send a JSON object'), undefined);
    } else if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
      done(new NestedTooDeep(MAX_JSON_DEPTH), undefined);
    } else {
      fastifyJsonParser(request, text, done);
    }
  });
}

function declaresNoBody(headers: IncomingHttpHeaders): boolean {
  return (
    headers['transfer-encoding'] === undefined &&
    (headers['content-length'] === undefined || headers['content-length'] === '0')
  );
}
