/**
 * CORS for browser pages on other origins (CORS_ALLOWED_ORIGINS). Only an allowed `Origin` gets
 * `Access-Control-Allow-Origin` (its own value, never `*`: the API is called with an API key), on every
 * answer — errors and event streams included, so a page can read why it was refused. A preflight
 * (`OPTIONS` with `Access-Control-Request-Method`) from an allowed origin is answered 204 with the
 * methods and headers the API takes; from any other origin, 403. With no allowed origin configured
 * nothing here runs, and preflights stay 404 as before.
 *
 * Headers go on the raw response: an event stream takes the reply over (hijack) and writes its own
 * head, which keeps headers set on the raw response but not those set through Fastify's reply.
 */
import type { FastifyInstance } from 'fastify';
import { Forbidden, sendRejection } from './errors.js';

/** Request headers a browser client sends: the API key, JSON bodies, stream resumption. */
const ALLOWED_REQUEST_HEADERS = [
  'authorization',
  'x-api-key',
  'content-type',
  'last-event-id',
  'x-account-id',
  'x-account-type',
  'mcp-session-id',
  'mcp-protocol-version',
].join(', ');
const ALLOWED_METHODS = 'GET, POST, PUT, DELETE, OPTIONS';
/** Response headers a page may read beyond the CORS-safelisted ones. */
export const EXPOSED_HEADERS = 'Retry-After, Mcp-Session-Id';
const PREFLIGHT_MAX_AGE_S = '600';

export function installCors(app: FastifyInstance, allowedOrigins: ReadonlySet<string>): void {
  if (allowedOrigins.size === 0) return;

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    // The answer differs by Origin: caches must keep them apart.
    reply.raw.setHeader('vary', 'Origin');
    if (origin === undefined || !allowedOrigins.has(origin)) return;
    reply.raw.setHeader('access-control-allow-origin', origin);
    reply.raw.setHeader('access-control-expose-headers', EXPOSED_HEADERS);
  });

  app.options('/*', async (request, reply) => {
    const origin = request.headers.origin;
    if (request.headers['access-control-request-method'] === undefined || origin === undefined) {
      return sendRejection(reply, new Forbidden('OPTIONS is answered to CORS preflights only'));
    }
    if (!allowedOrigins.has(origin)) {
      return sendRejection(reply, new Forbidden('this origin may not call the API (CORS_ALLOWED_ORIGINS)'));
    }
    return reply
      .code(204)
      .header('access-control-allow-methods', ALLOWED_METHODS)
      .header('access-control-allow-headers', ALLOWED_REQUEST_HEADERS)
      .header('access-control-max-age', PREFLIGHT_MAX_AGE_S)
      .send();
  });
}
