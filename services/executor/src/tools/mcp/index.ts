// MCP servers as tool sources: sessions per account (mcp-connections.ts), their transports through the SSRF
// guard or the script sandbox (mcp-transports.ts, stdio-sandbox-transport.ts), listing and calling tools
// (mcp-tool-runner.ts) and the result's form (mcp-result.ts).
export { McpConnections, type McpConnectionsOptions, type McpSession } from './mcp-connections.js';
export { McpToolRunner, serverCredentials } from './mcp-tool-runner.js';
export type {
  ListedMcpTools,
  McpProgress,
  McpTaskContext,
  McpToolRunContext,
  McpToolRunnerOptions,
} from './mcp-tool-runner.js';
export { mcpOutcome, type McpContentReference, type McpResultOrigin } from './mcp-result.js';
export {
  createMcpTransport,
  guardedFetch,
  type McpServerCredentials,
  type McpStdioLauncher,
  type McpTransportDeps,
} from './mcp-transports.js';
export { sandboxStdioLauncher, StdioSandboxTransport } from './stdio-sandbox-transport.js';
