/**
 * The web console at `/console`: static pages shipped in this package (`console/`), loaded once at
 * start-up and served from memory. They call the HTTP API from the same origin with the API key the
 * user types (kept in sessionStorage) and follow a task with EventSource and a stream token. Every page
 * carries a Content-Security-Policy that allows scripts, styles and connections from this origin only
 * (no inline script, no third party), and no Referer leaves it.
 */
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { NotFound, sendRejection } from '../errors.js';

export const CONSOLE_PATH = '/console';

const CONSOLE_DIR = new URL('../../console/', import.meta.url);

const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'console.css': 'text/css; charset=utf-8',
  'console.js': 'text/javascript; charset=utf-8',
  'task-view.js': 'text/javascript; charset=utf-8',
  'answer-text.js': 'text/javascript; charset=utf-8',
  'approvals-view.js': 'text/javascript; charset=utf-8',
  'credentials-view.js': 'text/javascript; charset=utf-8',
  'schedules-view.js': 'text/javascript; charset=utf-8',
  'versions-view.js': 'text/javascript; charset=utf-8',
  'task-list.js': 'text/javascript; charset=utf-8',
  'task-waterfall.js': 'text/javascript; charset=utf-8',
  'threads-view.js': 'text/javascript; charset=utf-8',
} as const;

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
} as const;

export function registerConsoleRoutes(app: FastifyInstance): void {
  const files = new Map(
    Object.entries(FILES).map(([name, type]) => [
      name,
      { type, body: readFileSync(new URL(name, CONSOLE_DIR)) },
    ]),
  );

  app.get(CONSOLE_PATH, async (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 302));
  app.get(`${CONSOLE_PATH}/`, async (_request, reply) => send(reply, 'index.html'));
  app.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/:file`, async (request, reply) =>
    send(reply, request.params.file),
  );

  function send(reply: FastifyReply, name: string): FastifyReply {
    const file = files.get(name);
    if (file === undefined) return sendRejection(reply, new NotFound(`no console file ${name}`));
    return reply.headers(SECURITY_HEADERS).type(file.type).send(file.body);
  }
}
