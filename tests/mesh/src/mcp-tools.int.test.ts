/**
 * Issue 11, through the whole mesh: an MCP server defined per account through the gateway, an agent bound to
 * it, a task submitted over HTTP. The assembler resolves the server and seals the user's token; the executor
 * lists the server's tools (the test kit's real MCP server, official SDK, Streamable HTTP), calls one, streams
 * its progress, and the token reaches that server only.
 */
import {
  startMcpServer,
  startRecordingApi,
  startScriptedModel,
  type McpTestServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, eventTypes, sseEvents, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const MCP_TOKEN = `canary-mcp-token-${crypto.randomUUID()}`;
const API_KEY = `canary-api-key-${crypto.randomUUID()}`;

let mesh: Mesh;
let mcp: McpTestServer;
let api: RecordingApi;
let model: ScriptedModel;

beforeAll(async () => {
  mcp = await startMcpServer({ bearerToken: MCP_TOKEN });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/lookup', reply: { body: { ok: true } } }],
  });
  model = await startScriptedModel({ respond: () => ({ content: 'unused' }) });
  mesh = await startMesh();
  for (const [name, value] of Object.entries({ KIT_TOKEN: MCP_TOKEN, LOOKUP_KEY: API_KEY, MODEL_KEY: 'm' })) {
    await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/${name}`, { value });
  }
  await admin(mesh, 'PUT', '/mcp-servers/kit', {
    transport: { type: 'streamable-http', url: mcp.url },
    auth: { type: 'bearer', token_source: 'KIT_TOKEN' },
    tool_filter: { allow: ['echo', 'count_slowly'] },
    tool_prefix: 'kit_',
  });
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    name: 'lookup',
    description: 'looks something up',
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: `${api.url}/lookup`, param_placement: 'query' },
    auth_config: {
      type: 'api_key',
      mapping: [{ source: 'LOOKUP_KEY', target: 'X-Api-Key', location: 'header' }],
    },
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'mcp_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: ['lookup'],
    mcp_servers: ['kit'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await Promise.all([model?.stop(), api?.stop(), mcp?.stop()]);
});

it('an agent whose tools come from an MCP server completes a task: tool_start, tool_progress and tool_result, the token sent to that server only', async () => {
  model.enqueue({
    toolCalls: [
      { name: 'kit_echo', arguments: { text: 'hi' } },
      { name: 'kit_count_slowly', arguments: { steps: 2 } },
      { name: 'lookup', arguments: { q: 'x' } },
    ],
  });
  model.enqueue({ content: 'all tools answered' });
  const response = await submit(mesh, {
    workflow_id: 'mcp_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'use the MCP tools' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  const events = await sseEvents(mesh, trace_id);

  expect(eventTypes(events).at(-1)).toBe('done');
  const firstCall = model.requests[0]?.body as { tools?: { function: { name: string } }[] } | undefined;
  const offered = firstCall?.tools ?? [];
  expect(offered.map((tool) => tool.function.name).sort()).toEqual([
    'kit_count_slowly',
    'kit_echo',
    'lookup',
  ]);
  const started = events
    .filter((event) => event.type === 'tool_start')
    .map((event) => (event.data as { tool: string }).tool);
  expect(started.sort()).toEqual(['kit_count_slowly', 'kit_echo', 'lookup']);
  expect(events.filter((event) => event.type === 'tool_progress')).toHaveLength(2);
  expect(events.filter((event) => event.type === 'tool_result').map((event) => event.data)).toEqual(
    expect.arrayContaining([expect.objectContaining({ tool: 'kit_echo', ok: true, result: 'echo: hi' })]),
  );

  expect(mcp.calls.find((call) => call.tool === 'echo')?.headers.authorization).toBe(`Bearer ${MCP_TOKEN}`);
  expect(JSON.stringify(api.requests)).not.toContain(MCP_TOKEN);
  expect(JSON.stringify(mcp.requests)).not.toContain(API_KEY);
  expect(JSON.stringify(events)).not.toContain(MCP_TOKEN);
});
