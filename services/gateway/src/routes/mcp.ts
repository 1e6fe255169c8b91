/**
 * `/mcp`: the mesh as an MCP server over Streamable HTTP (the SDK's transport, with sessions). `POST`
 * carries JSON-RPC: `initialize` without `Mcp-Session-Id` opens a session, everything else names its
 * session; `DELETE` ends a session; `GET` (a stream for server-initiated messages) is 405, since this
 * server sends none. Every request is authenticated like the task endpoints (an API key as
 * `Authorization: Bearer` or `x-api-key`; an admin or trusted caller naming `x-account-id`), and a
 * refusal is the gateway's error body (401, 403, 429, ...), not JSON-RPC. A session belongs to the
 * caller that opened it ({@link McpSessionTable}). A response's connection closing is handed to the call
 * answered on it, which then cancels its task.
 */
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAccount, type AccountCaller } from '../auth.js';
import { Forbidden, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import { eventStreamCaller } from '../event-stream-slots.js';
import { createAgentMcpServer, requestAuthInfo, type AgentMcpServerDeps } from '../mcp/agent-mcp-server.js';
import { McpSessionTable, type McpSessionLimits, type SessionUse } from '../mcp/mcp-sessions.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface McpRouteDeps extends AgentMcpServerDeps {
  authenticate: AuthenticateRequest;
  /** Browser origins that may call (CORS_ALLOWED_ORIGINS), besides the gateway's own. */
  allowedOrigins: ReadonlySet<string>;
  sessions: McpSessionLimits;
}

export const MCP_PATH = '/mcp';
const SESSION_HEADER = 'mcp-session-id';

interface McpSession {
  server: Server;
  transport: StreamableHTTPServerTransport;
  close(): Promise<void>;
}

/** Registers `/mcp`; returns the session table (its size is what tests and stats read). */
export function registerMcpRoutes(app: FastifyInstance, deps: McpRouteDeps): McpSessionTable<McpSession> {
  const sessions = new McpSessionTable<McpSession>(deps.sessions, (_id, reason) =>
    deps.log.info({ reason }, 'mcp session closed'),
  );
  app.addHook('onClose', async () => sessions.closeAll());

  app.post(MCP_PATH, async (request, reply) => {
    const caller = await accountCaller(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const owner = eventStreamCaller(caller, caller.accountId);
    const sessionId = sessionIdOf(request);
    if (sessionId !== undefined) {
      const use = sessions.use(sessionId, owner);
      if (use === undefined) return sendRejection(reply, unknownSession());
      try {
        await serve(use.session.transport, request, reply, caller, owner, deps);
      } finally {
        use.release();
      }
      return;
    }
    if (!isInitializeRequest(request.body)) {
      return sendRejection(
        reply,
        new InvalidRequest(
          `send \`initialize\` first, then name the session in the ${SESSION_HEADER} header`,
        ),
      );
    }
    const reservation = sessions.reserve(owner);
    if (reservation instanceof Rejection) return sendRejection(reply, reservation);
    // The session joins the table as soon as it has its id, before the client can learn it and send
    // its next request; it stays in use until this response ends.
    let initializing: SessionUse<McpSession> | undefined;
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        reservation.commit(id, session);
        initializing = sessions.use(id, owner);
      },
    });
    const server = createAgentMcpServer(deps, transport);
    const session: McpSession = { server, transport, close: () => server.close() };
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.remove(transport.sessionId);
    };
    try {
      await server.connect(transport);
      await serve(transport, request, reply, caller, owner, deps);
    } finally {
      initializing?.release();
      if (transport.sessionId === undefined) {
        reservation.cancel();
        await session.close();
      }
    }
  });

  app.delete(MCP_PATH, async (request, reply) => {
    const caller = await accountCaller(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const owner = eventStreamCaller(caller, caller.accountId);
    const sessionId = sessionIdOf(request);
    if (sessionId === undefined)
      return sendRejection(reply, new InvalidRequest(`${SESSION_HEADER} is required`));
    const use = sessions.use(sessionId, owner);
    if (use === undefined) return sendRejection(reply, unknownSession());
    try {
      // The transport answers and closes the session; its onclose takes it out of the table.
      await serve(use.session.transport, request, reply, caller, owner, deps);
    } finally {
      use.release();
    }
  });

  app.get(MCP_PATH, async (request, reply) => {
    const caller = await accountCaller(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    return reply
      .code(405)
      .header('allow', 'POST, DELETE')
      .send(
        new InvalidRequest('this MCP server sends no messages of its own: there is no GET stream').toBody(),
      );
  });
  return sessions;
}

async function accountCaller(
  deps: McpRouteDeps,
  request: FastifyRequest,
): Promise<AccountCaller | Rejection> {
  const origin = request.headers.origin;
  if (origin !== undefined && !originAllowed(origin, request, deps.allowedOrigins)) {
    return new Forbidden('this origin may not call /mcp (CORS_ALLOWED_ORIGINS)');
  }
  const caller = await deps.authenticate(request);
  return caller instanceof Rejection ? caller : requireAccount(caller);
}

function sessionIdOf(request: FastifyRequest): string | undefined {
  const value = request.headers[SESSION_HEADER];
  return Array.isArray(value) ? value[0] : value;
}

function unknownSession(): NotFound {
  // Also for another caller's session: its existence is not for them to learn.
  return new NotFound(
    'no such MCP session (it ended, or expired): send `initialize` without a session id to start one',
  );
}

/**
 * Hands the request to the transport, with the caller and the response's close as its auth info, and
 * waits until the response has ended (an SSE answer lasts as long as its call).
 */
async function serve(
  transport: StreamableHTTPServerTransport,
  request: FastifyRequest,
  reply: FastifyReply,
  caller: AccountCaller,
  owner: string,
  deps: McpRouteDeps,
): Promise<void> {
  const disconnected = new AbortController();
  const closed = once(reply.raw, 'close').then(() => disconnected.abort());
  const raw = request.raw as IncomingMessage & { auth?: AuthInfo };
  raw.auth = requestAuthInfo({ caller, disconnected: disconnected.signal }, owner);
  reply.hijack();
  const socket = reply.raw.socket;
  await transport.handleRequest(raw, reply.raw, request.body);
  await closed;
  // Hijacked, the connection is not Fastify's to close: a stopping gateway would wait on it while idle.
  if (deps.stopping.aborted) socket?.destroySoon();
  // Hijacked replies skip the request log; this is the request's line.
  deps.log.info(
    {
      method: request.method,
      route: MCP_PATH,
      status: reply.raw.statusCode,
      duration_ms: Math.round(reply.elapsedTime),
      client_gone: !reply.raw.writableFinished,
    },
    'mcp request ended',
  );
}

/**
 * The MCP transport spec asks servers to check `Origin`, so that a page a user opens cannot reach a
 * local MCP server through DNS rebinding: a browser's request is served only from the gateway's own
 * origin or one CORS_ALLOWED_ORIGINS names. Clients that are not browsers send no `Origin`.
 */
function originAllowed(origin: string, request: FastifyRequest, allowed: ReadonlySet<string>): boolean {
  if (allowed.has(origin)) return true;
  const host = request.headers.host;
  return host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
}
