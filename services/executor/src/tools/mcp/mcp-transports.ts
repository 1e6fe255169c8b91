/**
 * The MCP SDK transports of one server connection. HTTP ones (Streamable HTTP, legacy SSE) send through
 * the executor's SSRF guard — the URL checked before every request and every address checked inside the
 * socket's DNS lookup, as for HTTP tools — with the server's credential headers on its own requests only and
 * no redirects followed (a redirect could carry them elsewhere). stdio servers are started by the sandbox
 * launcher (`stdio-sandbox-transport.ts`): no command runs outside the script sandbox.
 */
import type { McpServerConnection, McpStdioTransport } from '@agentmesh/protocol';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { fetch as undiciFetch, type Dispatcher } from 'undici';
import type { OutboundGuard } from '../http/outbound-guard.js';
import { McpServerError } from '../tool-errors.js';

/** What a server's auth put into its requests (headers) or its environment (stdio). */
export interface McpServerCredentials {
  readonly headers: Readonly<Record<string, string>>;
  readonly env: Readonly<Record<string, string>>;
}

/** Starts a stdio server inside the script sandbox; its stdin/stdout become the transport. */
export interface McpStdioLauncher {
  launch(transport: McpStdioTransport, env: Readonly<Record<string, string>>): Transport;
}

export interface McpTransportDeps {
  readonly guard: OutboundGuard;
  /** Connects only to addresses the guard checked (`guard.createAgent()`). */
  readonly dispatcher: Dispatcher;
  /** Absent: this executor has no script sandbox, and stdio servers cannot run here. */
  readonly stdio?: McpStdioLauncher;
}

export function createMcpTransport(
  server: McpServerConnection,
  credentials: McpServerCredentials,
  deps: McpTransportDeps,
): Transport {
  const { transport } = server;
  if (transport.type === 'stdio') {
    if (deps.stdio === undefined) {
      throw new McpServerError(
        `MCP server ${server.name} runs over stdio, which needs the script sandbox; this executor has no SCRIPTS_DIR`,
      );
    }
    return deps.stdio.launch(transport, credentials.env);
  }
  const url = new URL(transport.url);
  const options = {
    fetch: guardedFetch(deps.guard, deps.dispatcher),
    requestInit: { headers: { ...credentials.headers }, redirect: 'error' as const },
  };
  return transport.type === 'sse'
    ? new SSEClientTransport(url, options)
    : new StreamableHTTPClientTransport(url, options);
}

/** `fetch` through the guard: the URL is checked first, the connection opens only to checked addresses. */
export function guardedFetch(guard: OutboundGuard, dispatcher: Dispatcher): FetchLike {
  return async (input, init) => {
    const url = new URL(input instanceof URL ? input.href : input);
    guard.checkUrl(url);
    const response = await undiciFetch(url, {
      ...(init as Parameters<typeof undiciFetch>[1]),
      dispatcher,
      redirect: 'error',
    });
    return response as unknown as Response;
  };
}
