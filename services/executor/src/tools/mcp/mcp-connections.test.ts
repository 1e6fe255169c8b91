import type { McpServerConnection } from '@agentmesh/protocol';
import { startMcpServer, waitFor, type McpTestServer } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { OutboundGuard } from '../http/outbound-guard.js';
import { McpConnections } from './mcp-connections.js';

let server: McpTestServer | undefined;
let pool: McpConnections | undefined;
afterEach(async () => {
  await pool?.close();
  await server?.stop();
  pool = server = undefined;
});

function connections(options: { maxSessions?: number; listTtlMs?: number } = {}): McpConnections {
  const guard = new OutboundGuard({ allowHosts: ['127.0.0.1'] });
  return new McpConnections({
    transports: { guard, dispatcher: guard.createAgent() },
    listTtlMs: options.listTtlMs ?? 60_000,
    idleMs: 60_000,
    maxSessions: options.maxSessions ?? 16,
    connectTimeoutMs: 5_000,
  });
}

const noCredentials = { headers: {}, env: {} };

describe('McpConnections', () => {
  it('one account reuses its session; another account, or other credentials, get their own', async () => {
    server = await startMcpServer();
    pool = connections();
    const kit: McpServerConnection = { name: 'kit', transport: { type: 'streamable-http', url: server.url } };
    await pool.listTools('acme', kit, noCredentials);
    await pool.listTools('acme', kit, noCredentials);
    expect(server.sessions()).toBe(1);
    await pool.listTools('globex', kit, noCredentials);
    expect(server.sessions()).toBe(2);
    await pool.listTools('acme', kit, { headers: { authorization: 'Bearer other-user' }, env: {} });
    expect(server.sessions()).toBe(3);
    expect(pool.size).toBe(3);
  });

  it('a tool list is reused within its TTL and listed again after it', async () => {
    server = await startMcpServer();
    const kit: McpServerConnection = {
      name: 'kit',
      transport: { type: 'streamable-http', url: server.url },
      list_ttl_ms: 50,
    };
    pool = connections();
    const listed = () =>
      server?.requests.filter((request) => request.rpcMethods.includes('tools/list')).length ?? 0;
    await pool.listTools('acme', kit, noCredentials);
    await pool.listTools('acme', kit, noCredentials);
    expect(listed()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    await pool.listTools('acme', kit, noCredentials);
    expect(listed()).toBe(2);
  });

  it('beyond maxSessions the least recently used idle session is closed', async () => {
    server = await startMcpServer();
    pool = connections({ maxSessions: 1 });
    const kit: McpServerConnection = { name: 'kit', transport: { type: 'streamable-http', url: server.url } };
    await pool.listTools('acme', kit, noCredentials);
    await pool.listTools('globex', kit, noCredentials);
    await waitFor(() => pool?.size === 1, { description: 'the pool to close the older session' });
    // acme's session was the one closed: using it again opens a new one.
    await pool.listTools('acme', kit, noCredentials);
    expect(server.sessions()).toBe(3);
  });
});
