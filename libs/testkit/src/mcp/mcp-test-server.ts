/**
 * A real MCP server for tests, written with the official SDK and served over Streamable HTTP on 127.0.0.1
 * (a random port; path `/mcp`), and over the legacy HTTP+SSE transport (`GET /sse`, `POST /messages`). Every HTTP request is recorded with its headers and JSON-RPC method, every
 * tool call with its arguments and the headers it came with, so a test can tell which credential reached the
 * server. One SDK server per session (the SDK binds a server to one transport); `changeTools()` adds
 * `late_tool` to every session, which makes the SDK send `notifications/tools/list_changed`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { startLoopbackServer } from '../http/loopback-server.js';
import { recordRequest, type HeaderMap } from '../http/recorded-request.js';
import { registerLateTool, registerMcpTestTools } from './mcp-test-tools.js';

export interface RecordedMcpHttpRequest {
  method: string;
  /** The JSON-RPC method of a POST (`initialize`, `tools/list`, `tools/call`, ...). */
  rpcMethods: string[];
  headers: HeaderMap;
}

export interface RecordedMcpToolCall {
  tool: string;
  arguments: Record<string, unknown>;
  /** Headers of the HTTP request that carried the call. */
  headers: HeaderMap;
  /** The `_meta` of the `tools/call` request, when it had one. */
  meta?: Record<string, unknown>;
}

export interface McpTestServerOptions {
  /** When set, every request without `Authorization: Bearer <token>` gets a 401. */
  bearerToken?: string;
}

export interface McpTestServer {
  /** `http://127.0.0.1:<port>/mcp` (Streamable HTTP) */
  url: string;
  /** `http://127.0.0.1:<port>/sse` (the legacy HTTP+SSE transport) */
  sseUrl: string;
  origin: string;
  requests: RecordedMcpHttpRequest[];
  calls: RecordedMcpToolCall[];
  /** Tool calls the client cancelled (`notifications/cancelled` seen by the handler). */
  cancelledCalls: string[];
  /** Sessions initialised so far. */
  sessions(): number;
  /** Adds `late_tool` to every session (and to sessions still to come); clients hear `tools/list_changed`. */
  changeTools(): void;
  stop(): Promise<void>;
}

export async function startMcpServer(options: McpTestServerOptions = {}): Promise<McpTestServer> {
  const requests: RecordedMcpHttpRequest[] = [];
  const calls: RecordedMcpToolCall[] = [];
  const cancelledCalls: string[] = [];
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: McpServer }>();
  let toolsChanged = false;
  let sessionCount = 0;

  const hooks = {
    onCall: (
      tool: string,
      args: Record<string, unknown>,
      headers: Record<string, string | string[] | undefined>,
      meta?: Record<string, unknown>,
    ) => calls.push({ tool, arguments: args, headers: definedHeaders(headers), ...(meta ? { meta } : {}) }),
    onCancelled: (tool: string) => cancelledCalls.push(tool),
  };
  const newServer = (): McpServer => {
    const server = new McpServer(
      { name: 'agentmesh-testkit', version: '1.0.0' },
      { capabilities: { tools: { listChanged: true } } },
    );
    registerMcpTestTools(server, hooks);
    if (toolsChanged) registerLateTool(server, hooks);
    return server;
  };
  const sseSessions = new Map<string, { transport: SSEServerTransport; server: McpServer }>();
  const newSession = (): StreamableHTTPServerTransport => {
    const server = newServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessionCount += 1;
        sessions.set(id, { transport, server });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    void server.connect(transport);
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const headers = { ...req.headers } as HeaderMap;
    if (req.method !== 'POST') {
      requests.push({ method: req.method ?? 'GET', rpcMethods: [], headers });
    }
    if (options.bearerToken !== undefined && req.headers.authorization !== `Bearer ${options.bearerToken}`) {
      if (req.method === 'POST') requests.push({ method: 'POST', rpcMethods: [], headers });
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"unauthorized"}');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname === '/sse' && req.method === 'GET') {
      const server = newServer();
      const transport = new SSEServerTransport('/messages', res);
      sseSessions.set(transport.sessionId, { transport, server });
      sessionCount += 1;
      transport.onclose = () => sseSessions.delete(transport.sessionId);
      await server.connect(transport);
      return;
    }
    if (url.pathname === '/messages' && req.method === 'POST') {
      const recorded = await recordRequest(req);
      const messages = Array.isArray(recorded.body) ? recorded.body : [recorded.body];
      requests.push({
        method: 'POST',
        rpcMethods: messages.map((message) => String((message as { method?: unknown } | null)?.method ?? '')),
        headers,
      });
      const session = sseSessions.get(url.searchParams.get('sessionId') ?? '');
      if (session === undefined) {
        res.writeHead(404).end('unknown session');
        return;
      }
      await session.transport.handlePostMessage(req, res, recorded.body);
      return;
    }
    if (url.pathname !== '/mcp') {
      res.writeHead(404).end();
      return;
    }
    let body: unknown;
    if (req.method === 'POST') {
      const recorded = await recordRequest(req);
      body = recorded.body;
      const messages = Array.isArray(body) ? body : [body];
      requests.push({
        method: 'POST',
        rpcMethods: messages.map((message) => String((message as { method?: unknown } | null)?.method ?? '')),
        headers,
      });
    }
    const sessionId = req.headers['mcp-session-id'];
    const existing = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (existing !== undefined) {
      await existing.transport.handleRequest(req, res, body);
      return;
    }
    if (req.method !== 'POST' || (body as { method?: unknown } | null)?.method !== 'initialize') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }),
      );
      return;
    }
    await newSession().handleRequest(req, res, body);
  };

  const http = await startLoopbackServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(error instanceof Error ? error.message : String(error));
    });
  });

  return {
    url: `${http.origin}/mcp`,
    sseUrl: `${http.origin}/sse`,
    origin: http.origin,
    requests,
    calls,
    cancelledCalls,
    sessions: () => sessionCount,
    changeTools: () => {
      if (toolsChanged) return;
      toolsChanged = true;
      for (const { server } of [...sessions.values(), ...sseSessions.values()])
        registerLateTool(server, hooks);
    },
    stop: async () => {
      for (const { transport } of sessions.values()) await transport.close().catch(() => undefined);
      for (const { transport } of sseSessions.values()) await transport.close().catch(() => undefined);
      await http.stop();
    },
  };
}

function definedHeaders(headers: Record<string, string | string[] | undefined>): HeaderMap {
  const defined: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) defined[name.toLowerCase()] = value;
  return defined;
}
