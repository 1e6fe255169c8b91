#!/usr/bin/env node
/**
 * The test kit's MCP server over stdio: `node dist/mcp/mcp-stdio-server.js`. The same tools as the HTTP form
 * (`mcp-test-tools.ts`), plus `whoami`, which tells which of the variables named in its input are set (never
 * their values), its pid and an id of this process, so a test sees what environment the launcher gave the
 * server and whether two calls reached the same process.
 */
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { registerMcpTestTools } from './mcp-test-tools.js';

/** Tells this process apart from any other, also in another pid namespace. */
const INSTANCE = randomUUID();
const server = new McpServer({ name: 'agentmesh-testkit-stdio', version: '1.0.0' });
registerMcpTestTools(server);
server.registerTool(
  'whoami',
  {
    description: 'Which of the named environment variables are set.',
    inputSchema: { names: z.array(z.string()) },
  },
  ({ names }) => {
    const set = names.filter((name) => (process.env[name] ?? '') !== '');
    return {
      content: [{ type: 'text', text: JSON.stringify({ set, pid: process.pid, instance: INSTANCE }) }],
      structuredContent: { set },
    };
  },
);
await server.connect(new StdioServerTransport());
