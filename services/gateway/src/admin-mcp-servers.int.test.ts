import { McpServerDefinition } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-mcp-0123456789abcdef';
const admin = bearer(ADMIN_KEY);
const asAccount = (accountId: string) => ({ ...admin, 'x-account-id': accountId });

let nats: NatsServer;
let gw: TestGateway;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { ADMIN_API_KEYS: ADMIN_KEY });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

const github = {
  transport: { type: 'streamable-http', url: 'https://mcp.example.com/mcp' },
  auth: { type: 'bearer', token_source: 'GITHUB_TOKEN' },
  tool_filter: { allow: ['create_issue'] },
  tool_prefix: 'gh_',
};

describe('/v1/admin/mcp-servers', () => {
  it('an account stores, reads, lists and deletes its own MCP server; another account does not see it', async () => {
    const put = await call(gw.url, 'PUT', '/v1/admin/mcp-servers/github', {
      body: github,
      headers: asAccount('acme'),
    });
    expect(put.status).toBe(201);
    expect(McpServerDefinition.parse(put.body)).toEqual({ name: 'github', ...github });
    const replaced = await call(gw.url, 'PUT', '/v1/admin/mcp-servers/github', {
      body: { ...github, tool_prefix: 'git_' },
      headers: asAccount('acme'),
    });
    expect(replaced.status).toBe(200);

    const read = await call(gw.url, 'GET', '/v1/admin/mcp-servers/github', { headers: asAccount('acme') });
    expect(read.body).toMatchObject({ name: 'github', tool_prefix: 'git_', scope: 'account' });
    const listed = await call(gw.url, 'GET', '/v1/admin/mcp-servers', { headers: asAccount('acme') });
    expect(listed.body.mcp_servers.map((server: { name: string }) => server.name)).toEqual(['github']);

    expect(
      (await call(gw.url, 'GET', '/v1/admin/mcp-servers/github', { headers: asAccount('globex') })).status,
    ).toBe(404);
    expect(
      (await call(gw.url, 'GET', '/v1/admin/mcp-servers', { headers: asAccount('globex') })).body.mcp_servers,
    ).toEqual([]);
    expect(
      (await call(gw.url, 'DELETE', '/v1/admin/mcp-servers/github', { headers: asAccount('globex') })).status,
    ).toBe(404);

    expect(
      (await call(gw.url, 'DELETE', '/v1/admin/mcp-servers/github', { headers: asAccount('acme') })).status,
    ).toBe(204);
    expect(
      (await call(gw.url, 'GET', '/v1/admin/mcp-servers/github', { headers: asAccount('acme') })).status,
    ).toBe(404);
  });

  it('a shared server is seen by every account and cannot be deleted by one', async () => {
    expect(
      (await call(gw.url, 'PUT', '/v1/admin/mcp-servers/shared_fs', { body: github, headers: admin })).status,
    ).toBe(201);
    const seen = await call(gw.url, 'GET', '/v1/admin/mcp-servers/shared_fs', { headers: asAccount('acme') });
    expect(seen.body).toMatchObject({ name: 'shared_fs', scope: 'shared' });
    expect(
      (await call(gw.url, 'DELETE', '/v1/admin/mcp-servers/shared_fs', { headers: asAccount('acme') }))
        .status,
    ).toBe(403);
  });

  it('a definition with a credential in clear, a query-string credential or a bad name is a 400', async () => {
    const inClear = await call(gw.url, 'PUT', '/v1/admin/mcp-servers/leaky', {
      body: { ...github, auth: { type: 'bearer', token: 'sk-in-clear' } },
      headers: admin,
    });
    expect(inClear.status).toBe(400);
    const inQuery = await call(gw.url, 'PUT', '/v1/admin/mcp-servers/q', {
      body: {
        ...github,
        auth: { type: 'api_key', mapping: [{ source: 'K', target: 'k', location: 'query' }] },
      },
      headers: admin,
    });
    expect(inQuery.status).toBe(400);
    expect(
      (await call(gw.url, 'PUT', '/v1/admin/mcp-servers/a.b', { body: github, headers: admin })).status,
    ).toBe(400);
    expect((await call(gw.url, 'GET', '/v1/admin/mcp-servers/x', {})).status).toBe(401);
  });
});
