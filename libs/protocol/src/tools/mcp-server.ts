// MCP (Model Context Protocol) servers as tool sources. A definition is kept in the registry (KV `mesh_mcp_servers`,
// owned by one account or by the shared catalogue, like agents and tools) and names how to reach the server —
// Streamable HTTP (legacy SSE accepted) or a stdio command, launched in the script sandbox — how the task's
// credentials go to it, which of its tools an agent sees and under which prefix.
//
// Credentials are named, never held: `auth` maps vault entries onto HTTP headers (api_key with header
// placements, bearer, basic; never the query string, where a credential would land in the URL and its logs),
// or, for stdio, onto the process's environment (`env`). The assembler seals exactly those entries into the
// task's vault; the executor sends them to that server only.
import { z } from 'zod';
import type { AuthMapping } from './http-auth.js';
import { ApiKeyAuth, BasicAuth, BearerAuth, CredentialName } from './http-auth.js';
import { HttpUrl } from './http-request.js';
import { toFunctionName } from './function-name.js';

/** A server's registry name: one token, also the `server` reference of its tools. */
export const McpServerName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, 'an MCP server name is 1-64 characters of a-z, A-Z, 0-9, "_" or "-"');
export type McpServerName = z.infer<typeof McpServerName>;

export const McpTransportType = {
  STREAMABLE_HTTP: 'streamable-http',
  /** The legacy HTTP+SSE transport (MCP 2024-11-05). */
  SSE: 'sse',
  STDIO: 'stdio',
} as const;
export type McpTransportType = (typeof McpTransportType)[keyof typeof McpTransportType];

export const McpHttpTransport = z.strictObject({
  type: z.enum([McpTransportType.STREAMABLE_HTTP, McpTransportType.SSE]),
  url: HttpUrl,
});
export type McpHttpTransport = z.infer<typeof McpHttpTransport>;

/** An environment variable name a stdio server is given. */
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name');

export const McpStdioTransport = z.strictObject({
  type: z.literal(McpTransportType.STDIO),
  /** `node`, `python` or `bun` (the sandbox's interpreters); the script is the first argument. */
  command: z.enum(['node', 'python', 'bun']),
  /** The server script, relative to the executor's script directory, then its arguments. */
  args: z.array(z.string()).min(1).max(64),
  /** Plain (non-secret) variables; credentials come through `auth` of type `env`. */
  env: z.record(EnvName, z.string()).optional(),
  /** Host paths the server may read (inside the executor's allowed read paths), e.g. its `node_modules`. */
  allow_read: z.array(z.string().min(1)).max(32).optional(),
});
export type McpStdioTransport = z.infer<typeof McpStdioTransport>;

export const McpTransport = z.discriminatedUnion('type', [McpHttpTransport, McpStdioTransport]);
export type McpTransport = z.infer<typeof McpTransport>;

/** For stdio servers: vault entries put into the server's environment (`target` = variable name). */
export const McpEnvAuth = z.strictObject({
  type: z.literal('env'),
  mapping: z.array(z.strictObject({ source: CredentialName, target: EnvName })).min(1),
});

const headerOnly = (mapping: readonly AuthMapping[] | undefined) =>
  (mapping ?? []).every((entry) => entry.location === 'header');

export const McpAuthConfig = z
  .discriminatedUnion('type', [ApiKeyAuth, BearerAuth, BasicAuth, McpEnvAuth])
  .refine((auth) => auth.type === 'env' || headerOnly(auth.mapping), {
    message: 'an MCP server gets credentials in headers only (location "header")',
    path: ['mapping'],
  });
export type McpAuthConfig = z.infer<typeof McpAuthConfig>;

/** Which of the server's tools are offered, by their MCP names; `deny` wins over `allow`. */
export const McpToolFilter = z.strictObject({
  /** Only these; absent means all. An empty list offers none (a server kept for recalled actions only). */
  allow: z.array(z.string().min(1)).max(256).optional(),
  deny: z.array(z.string().min(1)).max(256).optional(),
});
export type McpToolFilter = z.infer<typeof McpToolFilter>;

const serverFields = {
  name: McpServerName,
  transport: McpTransport,
  auth: McpAuthConfig.optional(),
  tool_filter: McpToolFilter.optional(),
  /** Put before each tool's name (`github_` + `create_issue`); the result is made a legal function name. */
  tool_prefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]{0,32}$/)
    .optional(),
  /** How long an executor keeps the server's tool list, in ms; its configured default when absent. */
  list_ttl_ms: z.int().positive().optional(),
};

const authFitsTransport = (server: { auth?: McpAuthConfig | undefined; transport: McpTransport }) =>
  server.auth === undefined || (server.auth.type === 'env') === (server.transport.type === 'stdio');
const AUTH_FITS_TRANSPORT = {
  message:
    'stdio servers take credentials as environment variables (auth type "env"), HTTP servers in headers',
  path: ['auth'],
};

/**
 * What a task carries of a server (`runtime_config.mcp_servers`): how to connect, which credentials, which
 * tools and under which names. All of it is bound into the task's vault, like every tool URL.
 */
export const McpServerConnection = z
  .strictObject(serverFields)
  .refine(authFitsTransport, AUTH_FITS_TRANSPORT);
export type McpServerConnection = z.infer<typeof McpServerConnection>;

/** A registry definition (`PUT /v1/admin/mcp-servers/{name}`). */
export const McpServerDefinition = z
  .strictObject({ ...serverFields, description: z.string().optional() })
  .refine(authFitsTransport, AUTH_FITS_TRANSPORT);
export type McpServerDefinition = z.infer<typeof McpServerDefinition>;
export type McpServerDefinitionInput = z.input<typeof McpServerDefinition>;

/** The connection part of a definition, as a task carries it. */
export function mcpServerConnection(definition: McpServerDefinition): McpServerConnection {
  const { description: _description, ...connection } = definition;
  return connection;
}

/** Every vault entry the server's auth reads, in order of first use. */
export function mcpServerCredentials(server: Pick<McpServerConnection, 'auth'>): string[] {
  const auth = server.auth;
  if (auth === undefined) return [];
  const own: string[] = [];
  if (auth.type === 'bearer') own.push(auth.token_source);
  if (auth.type === 'basic') own.push(auth.username_source, auth.password_source);
  return [...new Set([...own, ...(auth.mapping ?? []).map((entry) => entry.source)])];
}

/** Whether the definition's filter offers the MCP tool `toolName`. */
export function mcpToolAllowed(filter: McpToolFilter | undefined, toolName: string): boolean {
  if (filter?.deny?.includes(toolName) === true) return false;
  return filter?.allow === undefined || filter.allow.includes(toolName);
}

/** The function name the model sees for an MCP tool: prefix + name, made legal (see toFunctionName). */
export function mcpFunctionName(prefix: string | undefined, toolName: string): string {
  return toFunctionName(`${prefix ?? ''}${toolName}`);
}
