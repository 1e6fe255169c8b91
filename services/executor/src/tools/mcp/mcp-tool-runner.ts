/**
 * MCP tools of a task: listing a bound server's tools into canonical `MCP` tools (the definition's filter
 * applied, names prefixed and made legal function names, unique among the task's tools) and calling one with
 * `tools/call`. The server's credentials come from the task's vault and go to that server's connection only
 * (headers of its HTTP requests, or the environment of its sandboxed process). Progress notifications of a
 * call are handed to `onProgress` (the loop turns them into `tool_progress` events); the task's signal cancels
 * the call, which the SDK sends to the server as `notifications/cancelled`.
 */
import {
  ErrorCode,
  JsonSchemaObject,
  mcpFunctionName,
  mcpToolAllowed,
  type AuthConfig,
  type ClearVault,
  type McpServerConnection,
  type McpTool,
} from '@agentmesh/protocol';
import { ErrorCode as McpErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { resolveAuth } from '../http/auth.js';
import { findDenial } from '../http/outbound-request.js';
import type { SecretScrubber } from '../../secrets/index.js';
import {
  CredentialsMissingError,
  McpServerError,
  McpServerNotBoundError,
  ToolCallError,
} from '../tool-errors.js';
import { toolFailure, type ToolOutcome } from '../tool-outcome.js';
import type { McpConnections } from './mcp-connections.js';
import { mcpOutcome } from './mcp-result.js';
import type { McpServerCredentials } from './mcp-transports.js';

/** One MCP progress notification of a running call. */
export interface McpProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

/** What listing a task's servers needs from the task. */
export interface McpTaskContext {
  readonly servers: readonly McpServerConnection[];
  readonly vault: ClearVault;
  readonly account: string;
  /** Gets what the servers' auth derives from secrets (the Basic credential). */
  readonly scrubber: SecretScrubber;
}

export interface McpToolRunContext extends McpTaskContext {
  readonly callId: string;
  /**
   * `<trace_id>:<call_id>`, the same for a call run again after a redelivery: sent in the request's
   * `_meta` as {@link MCP_IDEMPOTENCY_KEY_META}, for servers that deduplicate side effects.
   */
  readonly idempotencyKey?: string;
  readonly signal: AbortSignal;
  readonly onProgress?: (progress: McpProgress) => void;
}

/** The `_meta` key of a tools/call request that carries the call's idempotency key. */
export const MCP_IDEMPOTENCY_KEY_META = 'agentmesh/idempotency-key';

export interface McpToolRunnerOptions {
  readonly connections: McpConnections;
  /** Budget of a call whose tool sets no timeout (renewed by each progress notification). */
  readonly defaultTimeoutMs: number;
  /** Bytes of a result's text (and of its structured content) kept; the rest is cut off and marked. */
  readonly maxResultBytes: number;
}

/** The servers' tools, and the ones left out because their name was taken. */
export interface ListedMcpTools {
  readonly tools: McpTool[];
  readonly skipped: { server: string; tool: string; name: string }[];
}

export class McpToolRunner {
  constructor(private readonly options: McpToolRunnerOptions) {}

  /** Every offered tool of the task's servers, named so that no name in `taken` (or of each other) repeats. */
  async toolsOf(task: McpTaskContext, taken: Iterable<string>): Promise<ListedMcpTools> {
    const names = new Set(taken);
    const listed = await Promise.all(
      task.servers.map(async (server) => ({
        server,
        tools: await this.#list(server, task),
      })),
    );
    const tools: McpTool[] = [];
    const skipped: ListedMcpTools['skipped'] = [];
    for (const { server, tools: offered } of listed) {
      for (const tool of offered) {
        if (!mcpToolAllowed(server.tool_filter, tool.name)) continue;
        const name = mcpFunctionName(server.tool_prefix, tool.name);
        if (names.has(name)) {
          skipped.push({ server: server.name, tool: tool.name, name });
          continue;
        }
        names.add(name);
        tools.push(canonicalTool(server, tool, name));
      }
    }
    return { tools, skipped };
  }

  async run(tool: McpTool, args: Record<string, unknown>, ctx: McpToolRunContext): Promise<ToolOutcome> {
    const server = ctx.servers.find((candidate) => candidate.name === tool.server);
    if (server === undefined) {
      return fromError(
        new McpServerNotBoundError(
          `${tool.name} names the MCP server ${tool.server}, which this agent does not bind; answer without it`,
          { detail: { server: tool.server } },
        ),
        ctx.scrubber,
      );
    }
    let credentials: McpServerCredentials;
    try {
      credentials = serverCredentials(server, ctx.vault, ctx.scrubber);
    } catch (error) {
      return fromError(error, ctx.scrubber);
    }
    const connections = this.options.connections;
    try {
      const result = await connections.use(ctx.account, server, credentials, (session) =>
        session.client.callTool(
          {
            name: tool.tool_name,
            arguments: { ...args, ...(tool.fixed_arguments ?? {}) },
            ...(ctx.idempotencyKey === undefined
              ? {}
              : { _meta: { [MCP_IDEMPOTENCY_KEY_META]: ctx.idempotencyKey } }),
          },
          undefined,
          {
            signal: ctx.signal,
            timeout: tool.timeout_ms ?? this.options.defaultTimeoutMs,
            resetTimeoutOnProgress: true,
            ...(ctx.onProgress === undefined ? {} : { onprogress: progressHandler(ctx.onProgress) }),
          },
        ),
      );
      // The SDK's compatibility form (`toolResult`) is for servers older than 2024-11-05; none is supported.
      if (!('content' in result) || !Array.isArray(result.content)) {
        return toolFailure(ErrorCode.TOOL_ERROR, `${tool.tool_name} answered no content`);
      }
      return mcpOutcome(
        result as Parameters<typeof mcpOutcome>[0],
        { server: server.name, tool: tool.tool_name, callId: ctx.callId },
        this.options.maxResultBytes,
      );
    } catch (error) {
      if (ctx.signal.aborted) {
        return toolFailure(ErrorCode.CANCELLED, `the call to ${tool.name} was cancelled`);
      }
      if (error instanceof McpError && error.code === McpErrorCode.RequestTimeout) {
        return toolFailure(ErrorCode.TOOL_TIMEOUT, `${tool.name} did not answer in time`);
      }
      // A broken exchange (not an error the server answered) gets a fresh session next time.
      if (!(error instanceof McpError)) await connections.drop(ctx.account, server, credentials);
      return fromError(error, ctx.scrubber, tool.name);
    }
  }

  async #list(server: McpServerConnection, task: McpTaskContext): Promise<Tool[]> {
    const credentials = serverCredentials(server, task.vault, task.scrubber);
    try {
      return await this.options.connections.listTools(task.account, server, credentials);
    } catch (error) {
      await this.options.connections.drop(task.account, server, credentials);
      if (error instanceof ToolCallError) throw error;
      const denial = findDenial(error);
      if (denial !== undefined) throw denial;
      throw new McpServerError(
        `the tools of MCP server ${server.name} could not be listed: ${describe(error)}`,
        {
          cause: error,
        },
      );
    }
  }
}

function canonicalTool(server: McpServerConnection, tool: Tool, name: string): McpTool {
  const parameters = JsonSchemaObject.safeParse(tool.inputSchema);
  return {
    type: 'MCP',
    name,
    description: tool.description ?? tool.title ?? '',
    parameters: parameters.success ? parameters.data : { type: 'object', properties: {} },
    origin: { format: 'mcp', id: `${server.name}/${tool.name}` },
    server: server.name,
    tool_name: tool.name,
  };
}

/** The server's auth applied to the vault: headers for HTTP servers, variables for stdio ones. */
export function serverCredentials(
  server: McpServerConnection,
  vault: ClearVault,
  scrubber: SecretScrubber,
): McpServerCredentials {
  const auth = server.auth;
  if (auth === undefined) return { headers: {}, env: {} };
  if (auth.type === 'env') {
    const missing = auth.mapping.filter((entry) => !vault[entry.source]).map((entry) => entry.source);
    if (missing.length > 0) throw new CredentialsMissingError(missing);
    return {
      headers: {},
      env: Object.fromEntries(auth.mapping.map((entry) => [entry.target, vault[entry.source] ?? ''])),
    };
  }
  // api_key (headers only, checked by the protocol), bearer and basic are HTTP tools' auth configs.
  const resolved = resolveAuth(auth as AuthConfig, vault);
  scrubber.addAll(resolved.derivedSecrets);
  return { headers: resolved.headers, env: {} };
}

function progressHandler(onProgress: (progress: McpProgress) => void) {
  return (update: { progress: number; total?: number; message?: string }) =>
    onProgress({
      progress: update.progress,
      ...(update.total === undefined ? {} : { total: update.total }),
      ...(update.message === undefined ? {} : { message: update.message }),
    });
}

function fromError(error: unknown, scrubber: SecretScrubber, toolName?: string): ToolOutcome {
  const denial = findDenial(error);
  const coded = denial ?? (error instanceof ToolCallError ? error : undefined);
  if (coded !== undefined) {
    const detail = coded.detail === undefined ? undefined : scrubber.scrubDeep(coded.detail);
    return toolFailure(coded.code, scrubber.scrub(coded.message), detail);
  }
  const what = toolName === undefined ? 'the MCP call' : `the call to ${toolName}`;
  return toolFailure(ErrorCode.TOOL_ERROR, scrubber.scrub(`${what} failed: ${describe(error)}`));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
