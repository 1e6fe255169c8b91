/**
 * The MCP server of one session: `tools/list` answers the agents the caller's account may run, and
 * `tools/call` runs one ({@link runAgentCall}). The SDK's low-level `Server` rather than `McpServer`,
 * because the tools are not fixed: they are read from the registry for each caller on every list and
 * call, so a new or removed agent shows at once and tenancy is decided per request. Who is calling comes
 * with each HTTP request (the route authenticates it and hands it over as the request's auth info).
 */
import type { Logger } from '@agentmesh/runtime';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListToolsRequestSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import type { AccountCaller } from '../auth.js';
import { runAgentCall, type AgentCallDeps } from './agent-call.js';
import { listAgentTools } from './agent-tools.js';

/** What the route knows of one HTTP request that the handlers need. */
export interface McpRequestContext {
  caller: AccountCaller;
  /** Aborted when the request's response closes: a call answered on it has nobody left to answer. */
  disconnected: AbortSignal;
}

const requestContexts = new WeakMap<AuthInfo, McpRequestContext>();

/** The auth info the transport hands to the handlers of one request, carrying its context. */
export function requestAuthInfo(context: McpRequestContext, clientId: string): AuthInfo {
  // No token: the API key stays with the request that presented it.
  const info: AuthInfo = { token: '', clientId, scopes: [] };
  requestContexts.set(info, context);
  return info;
}

export interface AgentMcpServerDeps extends AgentCallDeps {
  /** Aborted when the gateway stops. */
  stopping: AbortSignal;
}

/** Told to clients in `initialize`: the version of the tools' contract, not of the package. */
const SERVER_VERSION = '1.0.0';

export function createAgentMcpServer(
  deps: AgentMcpServerDeps,
  transport: StreamableHTTPServerTransport,
): Server {
  const server = new Server(
    { name: 'agentmesh-gateway', title: 'agentmesh agents', version: SERVER_VERSION },
    {
      capabilities: { tools: {} },
      instructions:
        'Each tool runs one agent of your account as a task and answers with its final message; progress notifications follow its tool calls and answer as they happen.',
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => {
    const { caller } = contextOf(extra.authInfo);
    return guarded(deps.log, 'tools/list', async () => ({
      tools: await listAgentTools(deps.agents, caller.accountId),
    }));
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const context = contextOf(extra.authInfo);
    const progressToken = request.params._meta?.progressToken;
    const result = await guarded(deps.log, 'tools/call', () =>
      runAgentCall(deps, {
        caller: context.caller,
        toolName: request.params.name,
        arguments: request.params.arguments,
        sendProgress:
          progressToken === undefined
            ? undefined
            : (progress, message) =>
                extra.sendNotification({
                  method: 'notifications/progress',
                  params: { progressToken, progress, message },
                }),
        cancelled: extra.signal,
        disconnected: context.disconnected,
        stopping: deps.stopping,
      }),
    );
    // A cancelled request gets no answer (MCP), so its response stream would stay open: end it.
    if (extra.signal.aborted) setImmediate(() => transport.closeSSEStream(extra.requestId));
    return result;
  });
  return server;
}

function contextOf(info: AuthInfo | undefined): McpRequestContext {
  const context = info && requestContexts.get(info);
  // The route attaches a context to every request it hands over.
  if (context === undefined) throw new McpError(McpErrorCode.InternalError, 'internal error');
  return context;
}

/** MCP errors go out as they are; anything else is logged and answered as an internal error. */
async function guarded<T>(log: Logger, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof McpError) throw error;
    log.error({ err: error, method: what }, 'mcp request failed');
    throw new McpError(McpErrorCode.InternalError, 'internal error');
  }
}
