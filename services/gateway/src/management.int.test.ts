import { AgentDefinition, ToolDefinition } from '@agentmesh/protocol';
import { openMeshBuckets, TOOL_SOURCE_FILE_FIELD } from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  seedFixture,
  startTestGateway,
  type TestGateway,
} from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-mgmt-0123456789abcdef';
const admin = bearer(ADMIN_KEY);
const CREDENTIAL_CANARY = `canary-credential-${crypto.randomUUID()}`;

let nats: NatsServer;
let gw: TestGateway;
let trusted: TestGateway;
let client: NatsConnection;
const everything: string[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  client.subscribe('>', {
    callback: (_error, msg) => void everything.push(new TextDecoder().decode(msg.data)),
  });
  await client.flush();
  gw = await startTestGateway(nats.url, {
    ADMIN_API_KEYS: ADMIN_KEY,
    API_KEYS: 'configured-key-0123456789abcdef=configured_account',
  });
  trusted = await startTestGateway(nats.url, { TRUST_ACCOUNT_HEADERS: 'true' });
});
afterAll(async () => {
  await trusted?.stop();
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

const tenantAgentBody = {
  model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
  tools: [],
};

const agent = {
  workflow_id: 'qcc_agent',
  system_prompt: 'You look companies up.',
  model: { model_name: 'deepseek-chat', base_url: 'http://127.0.0.1:9/v1', api_key_credential: 'MODEL_KEY' },
  tools: ['search_company_basic'],
};

describe('agents', () => {
  it('are created, read, listed, replaced and deleted; a second create is 409 and a model key in clear is refused', async () => {
    const created = await call(gw.url, 'POST', '/v1/admin/agents', { body: agent, headers: admin });
    expect(created.status).toBe(201);
    expect(AgentDefinition.parse(created.body)).toMatchObject({ ...agent, max_steps: expect.any(Number) });
    expect((await call(gw.url, 'POST', '/v1/admin/agents', { body: agent, headers: admin })).status).toBe(
      409,
    );

    const read = await call(gw.url, 'GET', '/v1/admin/agents/qcc_agent', { headers: admin });
    // An admin naming no account manages the shared catalogue; reads say where a definition lives.
    expect(read.body).toEqual({ ...created.body, scope: 'shared' });
    const { workflow_id: _id, ...withoutId } = agent;
    const replaced = await call(gw.url, 'PUT', '/v1/admin/agents/qcc_agent', {
      body: { ...withoutId, system_prompt: 'Be brief.' },
      headers: admin,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.system_prompt).toBe('Be brief.');
    const listed = await call(gw.url, 'GET', '/v1/admin/agents', { headers: admin });
    expect(listed.body.agents.map((a: AgentDefinition) => a.workflow_id)).toEqual(['qcc_agent']);

    const withKey = await call(gw.url, 'PUT', '/v1/admin/agents/leaky', {
      body: { ...withoutId, model: { ...agent.model, api_key: 'sk-in-clear' } },
      headers: admin,
    });
    expect(withKey.status).toBe(400);
    expect(withKey.body.message).toContain('model.api_key');

    expect((await call(gw.url, 'DELETE', '/v1/admin/agents/qcc_agent', { headers: admin })).status).toBe(204);
    const gone = await call(gw.url, 'GET', '/v1/admin/agents/qcc_agent', { headers: admin });
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe('NOT_FOUND');
  });
});

describe('plugins', () => {
  it('seed 000 plugin JSON, a seed 003 *.tool.json and a seed 001 tool are stored canonical and listed', async () => {
    const plugin = await call(gw.url, 'POST', '/v1/admin/plugins', {
      body: seedFixture('000-s2-plugin.json'),
      headers: admin,
    });
    expect(plugin.status).toBe(201);
    expect(plugin.body.format).toBe('http-plugin');
    expect(ToolDefinition.parse(plugin.body.tool)).toMatchObject({
      type: 'HTTP',
      name: 'search_company_basic',
    });

    const script = await call(gw.url, 'POST', '/v1/admin/plugins', {
      body: seedFixture('003-s2.2.3-execute-python-script.tool.json'),
      headers: admin,
    });
    expect(script.status).toBe(201);
    const scriptName: string = script.body.tool.name;
    expect(scriptName).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);

    const payloadTool = seedFixture('001-s2-payload.json').runtime_config.tools[1];
    const put = await call(gw.url, 'PUT', '/v1/admin/plugins/qichacha', {
      body: payloadTool,
      headers: admin,
    });
    expect(put.status).toBe(201);
    expect(put.body.tool).toMatchObject({ type: 'HTTP', name: 'qichacha' });

    const listed = await call(gw.url, 'GET', '/v1/admin/plugins', { headers: admin });
    expect(listed.body.plugins.map((tool: ToolDefinition) => tool.name).sort()).toEqual(
      ['qichacha', 'search_company_basic', scriptName].sort(),
    );
    const core = await call(gw.url, 'GET', '/v1/admin/plugins?namespace=core&tag=python', { headers: admin });
    expect(core.body.plugins.map((tool: ToolDefinition) => tool.name)).toEqual([scriptName]);
    const none = await call(gw.url, 'GET', '/v1/admin/plugins?tag=no-such-tag', { headers: admin });
    expect(none.body.plugins).toEqual([]);
    const read = await call(gw.url, 'GET', '/v1/admin/plugins/search_company_basic', { headers: admin });
    expect(read.body).toEqual({ ...plugin.body.tool, scope: 'shared' });
  });

  it('the routes are also (and first) called tools: what /tools writes, /plugins reads, and the other way round', async () => {
    const row = {
      name: 'tools_route_probe',
      description: 'A probe of the /tools routes, given as a raw sys_ai_plugin row.',
      parameter_schema: JSON.stringify({ type: 'object', properties: { q: { type: 'string' } } }),
      execution_config: JSON.stringify({ method: 'GET', base_url: 'http://127.0.0.1:9/probe' }),
      status: '0',
    };
    const created = await call(gw.url, 'POST', '/v1/admin/tools', { body: row, headers: admin });
    expect(created.status).toBe(201);
    expect(created.body.format).toBe('sys-ai-plugin-row');

    const listed = await call(gw.url, 'GET', '/v1/admin/tools', { headers: admin });
    expect(listed.body.tools.map((tool: ToolDefinition) => tool.name)).toContain('tools_route_probe');
    const viaAlias = await call(gw.url, 'GET', '/v1/admin/plugins/tools_route_probe', { headers: admin });
    expect(viaAlias.body).toEqual({ ...created.body.tool, scope: 'shared' });

    const deleted = await call(gw.url, 'DELETE', '/v1/admin/tools/tools_route_probe', { headers: admin });
    expect(deleted.status).toBe(204);
    const gone = await call(gw.url, 'GET', '/v1/admin/plugins/tools_route_probe', { headers: admin });
    expect(gone.status).toBe(404);
  });

  it('an invalid plugin is 400 naming the path, an unknown format is 400, a duplicate is 409, and delete removes it', async () => {
    const broken = seedFixture('000-s2-plugin.json');
    broken.name = 'broken_plugin';
    broken.execution.method = 'TELEPORT';
    const invalid = await call(gw.url, 'POST', '/v1/admin/plugins', { body: broken, headers: admin });
    expect(invalid.status).toBe(400);
    expect(invalid.body.message).toContain('execution.method');

    const unknown = await call(gw.url, 'POST', '/v1/admin/plugins', {
      body: { hello: 'world' },
      headers: admin,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain('not a recognised tool definition');

    const fresh = { ...seedFixture('000-s2-plugin.json'), name: 'temporary_tool' };
    expect((await call(gw.url, 'POST', '/v1/admin/plugins', { body: fresh, headers: admin })).status).toBe(
      201,
    );
    expect((await call(gw.url, 'POST', '/v1/admin/plugins', { body: fresh, headers: admin })).status).toBe(
      409,
    );
    const misnamed = await call(gw.url, 'PUT', '/v1/admin/plugins/other_name', {
      body: fresh,
      headers: admin,
    });
    expect(misnamed.status).toBe(400);
    expect(
      (await call(gw.url, 'DELETE', '/v1/admin/plugins/temporary_tool', { headers: admin })).status,
    ).toBe(204);
    expect(
      (await call(gw.url, 'DELETE', '/v1/admin/plugins/temporary_tool', { headers: admin })).status,
    ).toBe(404);
  });
});

describe('an AGENT tool', () => {
  it('is refused by POST and PUT with 400 INVALID_REQUEST naming sub_agents, and nothing is stored', async () => {
    const agentTool = {
      type: 'AGENT',
      name: 'agent_researcher',
      description: 'asks the researcher',
      parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
      workflow_id: 'researcher',
    };
    const posted = await call(gw.url, 'POST', '/v1/admin/tools', { body: agentTool, headers: admin });
    const put = await call(gw.url, 'PUT', '/v1/admin/tools/agent_researcher', {
      body: agentTool,
      headers: admin,
    });

    for (const refused of [posted, put]) {
      expect(refused.status).toBe(400);
      expect(refused.body).toMatchObject({ code: 'INVALID_REQUEST' });
      expect(refused.body.message).toContain('sub_agents');
    }
    expect((await call(gw.url, 'GET', '/v1/admin/tools/agent_researcher', { headers: admin })).status).toBe(
      404,
    );
  });
});

describe('a tool written from an assembler tools-directory file', () => {
  it('cannot be deleted through the API: 409 CONFLICT names the file, and the tool stays', async () => {
    const { tools: plugins } = await openMeshBuckets(jetstream(client));
    const tool = { ...seedFixture('000-s2-plugin.json'), name: 'file_owned_tool' };
    const stored = await call(gw.url, 'POST', '/v1/admin/plugins', { body: tool, headers: admin });
    expect(stored.status).toBe(201);
    // What an assembler's directory sync writes: the definition plus the file that owns it.
    await plugins.put(
      'shared.file_owned_tool',
      JSON.stringify({ ...stored.body.tool, [TOOL_SOURCE_FILE_FIELD]: 'http/file-owned.tool.json' }),
    );

    const refused = await call(gw.url, 'DELETE', '/v1/admin/plugins/file_owned_tool', { headers: admin });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'CONFLICT',
      detail: { source_file: 'http/file-owned.tool.json' },
    });
    expect(refused.body.message).toContain('remove the file');
    const kept = await call(gw.url, 'GET', '/v1/admin/plugins/file_owned_tool', { headers: admin });
    expect(kept.status).toBe(200);
    expect(kept.body).toEqual({ ...stored.body.tool, scope: 'shared' });
  });
});

describe("an executor's native tool in the shared catalogue", () => {
  it('cannot be deleted through the API: 409 CONFLICT names its class, and the tool stays listed', async () => {
    const { tools: plugins } = await openMeshBuckets(jetstream(client));
    // What the assembler's native tool mirror writes from an executor's announcement.
    const native = ToolDefinition.parse({
      type: 'NATIVE',
      name: 'native_owned_tool',
      description: 'A tool an executor implements.',
      parameters: { type: 'object', properties: {} },
      class_name: 'NativeOwnedTool',
    });
    await plugins.put('shared.native_owned_tool', JSON.stringify(native));

    const refused = await call(gw.url, 'DELETE', '/v1/admin/plugins/native_owned_tool', { headers: admin });
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      code: 'CONFLICT',
      detail: { type: 'NATIVE', class_name: 'NativeOwnedTool' },
    });
    expect(refused.body.message).toContain('native tool');
    const listed = await call(gw.url, 'GET', '/v1/admin/plugins', { headers: admin });
    expect(listed.body.plugins).toContainEqual({ ...native, scope: 'shared' });
  });
});

describe('tenancy of agents and plugins', () => {
  const asAccount = (accountId: string) => ({ ...admin, 'x-account-id': accountId });
  const tenantAgent = (workflowId: string, baseUrl: string) => ({
    workflow_id: workflowId,
    model: { model_name: 'm', base_url: baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: [],
  });

  it("a caller confined to account A writing B's agent id creates A's own agent; B's agent is untouched", async () => {
    const mine = await call(gw.url, 'PUT', '/v1/admin/agents/b_support', {
      body: tenantAgent('b_support', 'https://models.b.example/v1'),
      headers: asAccount('tenant_b'),
    });
    expect(mine.status).toBe(201);
    const attack = await call(trusted.url, 'PUT', '/v1/admin/agents/b_support', {
      body: tenantAgent('b_support', 'https://attacker.example/v1'),
      headers: { 'x-account-id': 'tenant_a' },
    });
    expect(attack.status).toBe(201);

    const asB = await call(gw.url, 'GET', '/v1/admin/agents/b_support', { headers: asAccount('tenant_b') });
    expect(asB.body).toMatchObject({ model: { base_url: 'https://models.b.example/v1' }, scope: 'account' });
    const asA = await call(gw.url, 'GET', '/v1/admin/agents/b_support', { headers: asAccount('tenant_a') });
    expect(asA.body).toMatchObject({ model: { base_url: 'https://attacker.example/v1' }, scope: 'account' });
    const listedB = await call(gw.url, 'GET', '/v1/admin/agents', { headers: asAccount('tenant_b') });
    expect(listedB.body.agents.filter((a: { workflow_id: string }) => a.workflow_id === 'b_support')).toEqual(
      [
        expect.objectContaining({
          model: expect.objectContaining({ base_url: 'https://models.b.example/v1' }),
        }),
      ],
    );
  });

  it("a caller confined to an account cannot change the shared catalogue: it reads shared items, writes only its own, and a shared item's delete is 403", async () => {
    const sharedTool = { ...seedFixture('000-s2-plugin.json'), name: 'shared_lookup' };
    expect(
      (await call(gw.url, 'PUT', '/v1/admin/plugins/shared_lookup', { body: sharedTool, headers: admin }))
        .status,
    ).toBe(201);

    const readShared = await call(trusted.url, 'GET', '/v1/admin/plugins/shared_lookup', {
      headers: { 'x-account-id': 'tenant_a' },
    });
    expect(readShared.body).toMatchObject({ name: 'shared_lookup', scope: 'shared' });
    const deleteShared = await call(trusted.url, 'DELETE', '/v1/admin/plugins/shared_lookup', {
      headers: { 'x-account-id': 'tenant_a' },
    });
    expect(deleteShared.status).toBe(403);
    expect(deleteShared.body.code).toBe('FORBIDDEN');

    const override = await call(trusted.url, 'PUT', '/v1/admin/plugins/shared_lookup', {
      body: { ...sharedTool, description: 'tenant a only' },
      headers: { 'x-account-id': 'tenant_a' },
    });
    expect(override.status).toBe(201);
    const forAdmin = await call(gw.url, 'GET', '/v1/admin/plugins/shared_lookup', { headers: admin });
    expect(forAdmin.body.description).not.toBe('tenant a only');
    const forOther = await call(gw.url, 'GET', '/v1/admin/plugins/shared_lookup', {
      headers: asAccount('tenant_b'),
    });
    expect(forOther.body).toMatchObject({ scope: 'shared' });
    expect(forOther.body.description).not.toBe('tenant a only');
  });

  it('a trusted caller naming no account may not use the management plane at all', async () => {
    for (const [method, path] of [
      ['GET', '/v1/admin/agents'],
      ['PUT', '/v1/admin/agents/anything'],
      ['POST', '/v1/admin/api-keys'],
      ['PUT', '/v1/admin/accounts/acme/users/u/credentials/K'],
    ] as const) {
      const res = await call(trusted.url, method, path, {
        ...(method === 'GET' ? {} : { body: { value: 'v' } }),
        headers: {},
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('FORBIDDEN');
    }
  });

  it.each(['*', '>', 'has space', 'caf\u00e9', 'a..b', '.hidden'])(
    'an agent or plugin path %j is 400 INVALID_REQUEST, never a 500',
    async (name) => {
      const path = encodeURIComponent(name);
      for (const [method, route] of [
        ['GET', `/v1/admin/agents/${path}`],
        ['PUT', `/v1/admin/agents/${path}`],
        ['DELETE', `/v1/admin/agents/${path}`],
        ['GET', `/v1/admin/plugins/${path}`],
        ['PUT', `/v1/admin/plugins/${path}`],
        ['DELETE', `/v1/admin/plugins/${path}`],
      ] as const) {
        const res = await call(gw.url, method, route, {
          ...(method === 'PUT' ? { body: tenantAgent('x', 'https://m.example/v1') } : {}),
          headers: admin,
        });
        expect(res.status, `${method} ${route}`).toBe(400);
        expect(res.body.code).toBe('INVALID_REQUEST');
      }
    },
  );
});

describe('credentials', () => {
  const path = '/v1/admin/accounts/acme/users/user%40example.com/credentials';

  it('are write-only: stored with 204, listed by name only, deleted; the value is in no answer, message or log line', async () => {
    const written = await call(gw.url, 'PUT', `${path}/QCC_KEY`, {
      body: { value: CREDENTIAL_CANARY },
      headers: admin,
    });
    expect(written.status).toBe(204);
    expect(written.text).toBe('');
    await call(gw.url, 'PUT', `${path}/QCC_SECRET`, { body: { value: 'second' }, headers: admin });

    const listed = await call(gw.url, 'GET', path, { headers: admin });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ names: ['QCC_KEY', 'QCC_SECRET'] });

    expect((await call(gw.url, 'DELETE', `${path}/QCC_SECRET`, { headers: admin })).status).toBe(204);
    expect((await call(gw.url, 'DELETE', `${path}/QCC_SECRET`, { headers: admin })).status).toBe(404);
    expect((await call(gw.url, 'GET', path, { headers: admin })).body).toEqual({ names: ['QCC_KEY'] });

    const badBody = await call(gw.url, 'PUT', `${path}/QCC_KEY`, {
      body: { value: CREDENTIAL_CANARY, extra: true },
      headers: admin,
    });
    expect(badBody.status).toBe(400);
    expect(badBody.text).not.toContain(CREDENTIAL_CANARY);

    await client.flush();
    expect(everything.some((text) => text.includes('"ct"'))).toBe(true);
    expect(everything.filter((text) => text.includes(CREDENTIAL_CANARY))).toEqual([]);
    expect(gw.logs.some((line) => line.includes('credentials'))).toBe(true);
    expect(gw.logs.filter((line) => line.includes(CREDENTIAL_CANARY))).toEqual([]);
  });

  it('a trusted caller naming an account manages only that account', async () => {
    const own = await call(trusted.url, 'PUT', `/v1/admin/accounts/acme/users/u/credentials/K`, {
      body: { value: 'v' },
      headers: { 'x-account-id': 'acme' },
    });
    expect(own.status).toBe(204);
    const other = await call(trusted.url, 'PUT', `/v1/admin/accounts/beta/users/u/credentials/K`, {
      body: { value: 'v' },
      headers: { 'x-account-id': 'acme' },
    });
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('FORBIDDEN');
  });
});

describe('account-wide credentials', () => {
  const path = '/v1/admin/accounts/wide/credentials';
  const asAccount = (accountId: string) => ({ ...admin, 'x-account-id': accountId });
  const canary = `canary-account-credential-${crypto.randomUUID()}`;

  it("are write-only: stored with 204, listed by name only apart from any user's, deleted (then 404); the value is in no answer, message or log line", async () => {
    const written = await call(gw.url, 'PUT', `${path}/MODEL_KEY`, {
      body: { value: canary },
      headers: admin,
    });
    expect(written.status).toBe(204);
    expect(written.text).toBe('');
    await call(gw.url, 'PUT', `${path}/SEARCH_KEY`, { body: { value: 'second' }, headers: admin });
    await call(gw.url, 'PUT', '/v1/admin/accounts/wide/users/u1/credentials/OWN_KEY', {
      body: { value: 'own' },
      headers: admin,
    });

    const listed = await call(gw.url, 'GET', path, { headers: admin });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ names: ['MODEL_KEY', 'SEARCH_KEY'] });
    expect(
      (await call(gw.url, 'GET', '/v1/admin/accounts/wide/users/u1/credentials', { headers: admin })).body,
    ).toEqual({ names: ['OWN_KEY'] });

    expect((await call(gw.url, 'DELETE', `${path}/SEARCH_KEY`, { headers: admin })).status).toBe(204);
    const again = await call(gw.url, 'DELETE', `${path}/SEARCH_KEY`, { headers: admin });
    expect(again.status).toBe(404);
    expect(again.body).toMatchObject({ code: 'NOT_FOUND', message: expect.stringContaining('SEARCH_KEY') });
    expect((await call(gw.url, 'GET', path, { headers: admin })).body).toEqual({ names: ['MODEL_KEY'] });

    await client.flush();
    expect(everything.filter((text) => text.includes(canary))).toEqual([]);
    expect(gw.logs.filter((line) => line.includes(canary))).toEqual([]);
  });

  it.each([
    ['a body without value', `${path}/K`, { nope: 'x' }],
    ['an empty value', `${path}/K`, { value: '' }],
    ['a value that is not a string', `${path}/K`, { value: 42 }],
    ['an extra field', `${path}/K`, { value: 'canary-extra-field-value', extra: true }],
    [
      'an account id that is no account id',
      `/v1/admin/accounts/${encodeURIComponent('a.b')}/credentials/K`,
      { value: 'v' },
    ],
  ])(
    'a PUT with %s is 400 INVALID_REQUEST {code,message,detail}, echoing no value',
    async (_what, route, body) => {
      const res = await call(gw.url, 'PUT', route, { body, headers: admin });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ code: 'INVALID_REQUEST', message: expect.any(String) });
      expect(res.body.detail).toBeDefined();
      expect(res.text).not.toContain('canary-extra-field-value');
    },
  );

  it("a caller naming an account manages only that account's set; an account API key may not manage credentials at all", async () => {
    const own = await call(trusted.url, 'PUT', '/v1/admin/accounts/acme/credentials/K', {
      body: { value: 'v' },
      headers: { 'x-account-id': 'acme' },
    });
    expect(own.status).toBe(204);
    for (const [method, route] of [
      ['PUT', '/v1/admin/accounts/beta/credentials/K'],
      ['GET', '/v1/admin/accounts/beta/credentials'],
      ['DELETE', '/v1/admin/accounts/beta/credentials/K'],
    ] as const) {
      for (const [url, headers] of [
        [trusted.url, { 'x-account-id': 'acme' }],
        [gw.url, asAccount('acme')],
      ] as const) {
        const res = await call(url, method, route, {
          ...(method === 'PUT' ? { body: { value: 'v' } } : {}),
          headers,
        });
        expect(res.status, `${method} ${route}`).toBe(403);
        expect(res.body.code).toBe('FORBIDDEN');
      }
    }

    const registered = await call(gw.url, 'POST', '/v1/admin/api-keys', {
      body: { account_id: 'acme', label: 'account-key' },
      headers: admin,
    });
    const accountKey = bearer(registered.body.api_key as string);
    for (const [method, route] of [
      ['PUT', '/v1/admin/accounts/acme/credentials/K'],
      ['GET', '/v1/admin/accounts/acme/credentials'],
      ['DELETE', '/v1/admin/accounts/acme/credentials/K'],
    ] as const) {
      const res = await call(gw.url, method, route, {
        ...(method === 'PUT' ? { body: { value: 'v' } } : {}),
        headers: accountKey,
      });
      expect(res.status, `${method} ${route}`).toBe(403);
    }
  });
});

describe('accounts an admin may act for', () => {
  it('GET /accounts lists, to an admin key naming no account, the accounts known from configured keys, agents, tools and credentials; a caller naming an account gets 403', async () => {
    const asAdminOf = (accountId: string) => ({ ...admin, 'x-account-id': accountId });
    await call(gw.url, 'PUT', '/v1/admin/agents/own_agent', {
      body: tenantAgentBody,
      headers: asAdminOf('agent_holder'),
    });
    await call(gw.url, 'PUT', '/v1/admin/accounts/credential_holder/credentials/K', {
      body: { value: 'v' },
      headers: admin,
    });
    await call(gw.url, 'PUT', '/v1/admin/accounts/user_credential_holder/users/u/credentials/K', {
      body: { value: 'v' },
      headers: admin,
    });

    const listed = await call(gw.url, 'GET', '/v1/admin/accounts', { headers: admin });

    expect(listed.status).toBe(200);
    expect(listed.body.accounts).toEqual(
      expect.arrayContaining([
        'configured_account',
        'agent_holder',
        'credential_holder',
        'user_credential_holder',
      ]),
    );
    expect([...listed.body.accounts].sort()).toEqual(listed.body.accounts);
    for (const [url, headers] of [
      [gw.url, asAdminOf('agent_holder')],
      [trusted.url, { 'x-account-id': 'agent_holder' }],
    ] as const) {
      const confined = await call(url, 'GET', '/v1/admin/accounts', { headers });
      expect(confined.status).toBe(403);
      expect(confined.body.code).toBe('FORBIDDEN');
    }
    const accountKey = await call(gw.url, 'GET', '/v1/admin/accounts', {
      headers: bearer('configured-key-0123456789abcdef'),
    });
    expect(accountKey.status).toBe(403);
  });
});

describe('API keys and access', () => {
  it('a registered key is answered once, lets its account submit, and stops working when revoked', async () => {
    const registered = await call(gw.url, 'POST', '/v1/admin/api-keys', {
      body: { account_id: 'keyed', label: 'ci' },
      headers: admin,
    });
    expect(registered.status).toBe(201);
    expect(registered.body).toMatchObject({ account_id: 'keyed', account_type: 'user', label: 'ci' });
    const apiKey: string = registered.body.api_key;

    const agent = { workflow_id: 'w', model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } };
    const put = await call(gw.url, 'PUT', '/v1/admin/agents/w', {
      body: agent,
      headers: { ...admin, 'x-account-id': 'keyed' },
    });
    expect(put.status).toBe(201);
    const body = { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] };
    const submitted = await call(gw.url, 'POST', '/v1/tasks', { body, headers: bearer(apiKey) });
    expect(submitted.status).toBe(202);
    expect(submitted.body.events_subject).toContain('.keyed.');

    expect(gw.logs.filter((line) => line.includes(apiKey))).toEqual([]);
    expect(
      (await call(gw.url, 'POST', '/v1/admin/api-keys/revoke', { body: { api_key: apiKey }, headers: admin }))
        .status,
    ).toBe(204);
    expect((await call(gw.url, 'POST', '/v1/tasks', { body, headers: bearer(apiKey) })).status).toBe(401);

    const own = await call(gw.url, 'POST', '/v1/admin/api-keys', {
      body: { account_id: 'keyed', api_key: 'my-own-key-0123456789abcdef' },
      headers: admin,
    });
    expect(own.status).toBe(201);
    expect(own.body.api_key).toBeUndefined();
  });

  it('without an admin key or trusted headers the management plane is 401 and the body is never read', async () => {
    const res = await call(gw.url, 'POST', '/v1/admin/agents', { body: '{not json', headers: {} });
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('UNAUTHORIZED');
  });
});
