import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../wait-for.js';
import { MCP_STDIO_SERVER_SCRIPT } from './mcp-stdio-script.js';
import { startMcpServer, type McpTestServer } from './mcp-test-server.js';
import { MCP_TEST_IMAGE_BASE64 } from './mcp-test-tools.js';

let server: McpTestServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  await server?.stop();
  server = undefined;
});

async function httpClient(
  url: string,
  headers: Record<string, string> = {},
  onToolsChanged?: (tools: Tool[]) => void,
) {
  const client = new Client(
    { name: 'testkit-test', version: '1.0.0' },
    onToolsChanged === undefined
      ? {}
      : { listChanged: { tools: { onChanged: (_error, tools) => onToolsChanged(tools ?? []) } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

describe('startMcpServer (Streamable HTTP)', () => {
  it('when a client calls echo and add, it answers text and structured content and records the calls with their headers', async () => {
    server = await startMcpServer();
    const client = await httpClient(server.url, { 'x-test': 'yes' });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(
      expect.arrayContaining([
        'echo',
        'add',
        'fail',
        'count_slowly',
        'snapshot',
        'wait_for_cancel',
        'unlock_tool',
      ]),
    );
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    const add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } });
    expect(add.structuredContent).toEqual({ sum: 5 });
    expect(server.calls.map((call) => [call.tool, call.arguments, call.headers['x-test']])).toEqual([
      ['echo', { text: 'hi' }, 'yes'],
      ['add', { a: 2, b: 3 }, 'yes'],
    ]);
    expect(server.requests.some((request) => request.rpcMethods.includes('tools/call'))).toBe(true);
  });

  it('when fail is called, the result has isError; snapshot answers an image and a resource link', async () => {
    server = await startMcpServer();
    const client = await httpClient(server.url);
    const failed = await client.callTool({ name: 'fail', arguments: { reason: 'no' } });
    expect(failed.isError).toBe(true);
    const snapshot = await client.callTool({ name: 'snapshot', arguments: {} });
    expect(snapshot.content).toEqual([
      { type: 'text', text: 'snapshot taken' },
      { type: 'image', data: MCP_TEST_IMAGE_BASE64, mimeType: 'image/png' },
      expect.objectContaining({ type: 'resource_link', name: 'latest.csv' }),
    ]);
  });

  it('when count_slowly runs with a progress token, the client hears one progress notification per step', async () => {
    server = await startMcpServer();
    const client = await httpClient(server.url);
    const progress: number[] = [];
    await client.callTool({ name: 'count_slowly', arguments: { steps: 3 } }, undefined, {
      onprogress: (update) => progress.push(update.progress),
    });
    expect(progress).toEqual([1, 2, 3]);
  });

  it('when the client aborts wait_for_cancel, the server sees the request cancelled', async () => {
    server = await startMcpServer();
    const client = await httpClient(server.url);
    const abort = new AbortController();
    const call = client.callTool({ name: 'wait_for_cancel', arguments: {} }, undefined, {
      signal: abort.signal,
    });
    await waitFor(() => server?.calls.some((c) => c.tool === 'wait_for_cancel') === true);
    abort.abort();
    await expect(call).rejects.toThrow();
    await waitFor(() => server?.cancelledCalls.includes('wait_for_cancel') === true);
  });

  it('when the tools change, a connected client hears tools/list_changed and sees late_tool', async () => {
    server = await startMcpServer();
    let changed: Tool[] | undefined;
    const client = await httpClient(server.url, {}, (tools) => (changed = tools));
    expect((await client.listTools()).tools.some((tool) => tool.name === 'late_tool')).toBe(false);
    server.changeTools();
    await waitFor(() => changed?.some((tool) => tool.name === 'late_tool') === true);
  });

  it('when a bearer token is required, a request without it gets 401 and one with it connects', async () => {
    server = await startMcpServer({ bearerToken: 'tok-1' });
    await expect(httpClient(server.url)).rejects.toThrow();
    const client = await httpClient(server.url, { authorization: 'Bearer tok-1' });
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
  });
});

describe('startMcpServer (legacy HTTP+SSE)', () => {
  it('when a client connects over SSE with its token, it lists the tools and a call is recorded with the headers', async () => {
    server = await startMcpServer({ bearerToken: 'tok-sse' });
    const client = new Client({ name: 'testkit-test', version: '1.0.0' });
    const headers = { authorization: 'Bearer tok-sse' };
    await client.connect(
      new SSEClientTransport(new URL(server.sseUrl), {
        requestInit: { headers },
        eventSourceInit: {
          fetch: (url, init) => fetch(url, { ...init, headers: { ...init?.headers, ...headers } }),
        },
      }),
    );
    clients.push(client);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'over sse' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'echo: over sse' }]);
    expect(server.calls.at(-1)?.headers.authorization).toBe('Bearer tok-sse');
  });
});

describe('the stdio MCP server script', () => {
  it('when launched with node, it lists its tools, answers a call and changes its list on unlock_tool', async () => {
    const client = new Client({ name: 'testkit-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [MCP_STDIO_SERVER_SCRIPT] }),
    );
    clients.push(client);
    const echo = await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } });
    expect(echo.content).toEqual([{ type: 'text', text: 'echo: over stdio' }]);
    await client.callTool({ name: 'unlock_tool', arguments: {} });
    expect((await client.listTools()).tools.some((tool) => tool.name === 'late_tool')).toBe(true);
  });
});
