/**
 * Issue 4, must-show 4, through the whole mesh: the scripted model calls the native `recall_actions`
 * tool, the recall service (a real process) asks ontology-query and the tool box (recording servers),
 * the model receives a dynamic tool and calls it, and the recording proxy receives the merged
 * arguments in their places.
 */
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
  waitFor,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, eventTypes, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const BOX = 'e59f35f8-65f3-46bb-b5f1-a428380b3edc';
const TOOL = '7acb8add-ecd0-45cf-bd4d-57674c3c69b0';

const toolDetail = {
  name: 'search_object_instance',
  description: 'Queries object instances of one object type.',
  api_spec: {
    parameters: [
      { name: 'x-account-id', in: 'header', required: true, schema: { type: 'string' } },
      { name: 'x-account-type', in: 'header', required: true, schema: { type: 'string' } },
      {
        name: 'X-HTTP-Method-Override',
        in: 'header',
        required: true,
        schema: { type: 'string', enum: ['GET'] },
      },
      {
        name: 'kn_id',
        in: 'path',
        required: true,
        description: 'knowledge network id',
        schema: { type: 'string' },
      },
    ],
    request_body: {
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              condition: { type: 'object', description: 'filter condition' },
              limit: { type: 'integer', description: 'how many to return' },
            },
          },
        },
      },
    },
  },
};

let mesh: Mesh;
let ontology: RecordingApi;
let toolbox: RecordingApi;
let proxy: RecordingApi;
let model: ScriptedModel;

beforeAll(async () => {
  ontology = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/api/ontology-query/v1/knowledge-networks/:kn_id/action-types/:at_id',
        reply: {
          status: 200,
          body: {
            actions: [
              {
                parameters: { 'x-account-id': 'test', 'x-account-type': 'user', limit: 5 },
                dynamic_params: { condition: {}, limit: null, kn_id: null },
              },
            ],
            action_source: { type: 'tool', box_id: BOX, tool_id: TOOL },
          },
        },
      },
    ],
  });
  toolbox = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/api/agent-operator-integration/internal-v1/tool-box/:box/tool/:tool',
        reply: { status: 200, body: toolDetail },
      },
    ],
  });
  proxy = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/proxy/:box/:tool',
        reply: { status: 200, body: { instances: [{ id: 'p1' }] } },
      },
    ],
  });
  model = await startScriptedModel({ respond: () => ({ content: 'Found one instance.' }) });
  mesh = await startMesh({
    recall: {
      ONTOLOGY_QUERY_URL: ontology.url,
      OPERATOR_INTEGRATION_URL: toolbox.url,
      API_URL_TEMPLATE: `${proxy.url}/proxy/{box_id}/{tool_id}`,
    },
  });
  await storeModelKey(mesh);
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'recall_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['recall_actions'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await Promise.all([ontology?.stop(), toolbox?.stop(), proxy?.stop()]);
});

it('the model recalls a dynamic tool and calls it; the proxy gets fixed and model arguments in place', async () => {
  model.enqueue(
    {
      toolCalls: [
        {
          name: 'recall_actions',
          arguments: {
            kn_id: 'kn_medical',
            at_id: 'generate_treatment_plan',
            unique_identity: { disease_id: 'disease_000001' },
          },
        },
      ],
    },
    {
      toolCalls: [
        {
          name: 'search_object_instance',
          arguments: { kn_id: 'kn_medical', condition: { field: 'x' }, limit: 3 },
        },
      ],
    },
  );
  const response = await submit(mesh, {
    workflow_id: 'recall_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'treat it' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  const events = await sseEvents(mesh, trace_id);
  expect(eventTypes(events).at(-1)).toBe('done');
  const starts = events.filter((e) => e.type === 'tool_start').map((e) => (e.data as { tool: string }).tool);
  expect(starts).toEqual(['recall_actions', 'search_object_instance']);
  expect(events.filter((e) => e.type === 'tool_result').every((e) => (e.data as { ok: boolean }).ok)).toBe(
    true,
  );

  const query = ontology.requests[0]!;
  expect(query.body).toEqual({ unique_identities: [{ disease_id: 'disease_000001' }] });
  expect(query.headers['x-account-id']).toBe(MESH_ACCOUNT);

  // The model saw the recalled tool on its next step.
  const third = model.requests.at(-1)!.body as { tools?: { function: { name: string } }[] };
  expect(third.tools?.map((t) => t.function.name)).toContain('search_object_instance');

  const call = proxy.requests[0]!;
  expect(call.method).toBe('POST');
  expect(call.path).toBe(`/proxy/${BOX}/${TOOL}`);
  expect(call.headers['x-account-id']).toBe('test');
  expect(call.headers['x-http-method-override']).toBe('GET');
  expect(call.body).toMatchObject({ condition: { field: 'x' }, limit: 3 });
});

it("an executor's native tool cannot be deleted: DELETE recall_actions is 409 CONFLICT, the tool stays listed, and the agent bound to it still runs", async () => {
  const headers = { authorization: `Bearer ${mesh.adminKey}` };
  // The assembler mirrors it from the executor's announcement.
  await waitFor(
    async () =>
      (await fetch(`${mesh.gatewayUrl}/v1/admin/plugins/recall_actions`, { headers })).status === 200,
    { timeoutMs: 30_000, description: 'recall_actions in the shared catalogue' },
  );
  const refused = await fetch(`${mesh.gatewayUrl}/v1/admin/plugins/recall_actions`, {
    method: 'DELETE',
    headers,
  });
  expect(refused.status).toBe(409);
  expect(await refused.json()).toMatchObject({ code: 'CONFLICT', detail: { type: 'NATIVE' } });

  const listed = (await (await admin(mesh, 'GET', '/plugins')).json()) as { plugins: { name: string }[] };
  expect(listed.plugins.map((tool) => tool.name)).toContain('recall_actions');

  const response = await submit(mesh, {
    workflow_id: 'recall_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'anything new?' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  const events = await sseEvents(mesh, trace_id);
  expect(eventTypes(events).at(-1)).toBe('done');
  // The model was offered the native tool: the assembler still found it for the agent.
  const offered = model.requests.at(-1)!.body as { tools?: { function: { name: string } }[] };
  expect(offered.tools?.map((t) => t.function.name)).toContain('recall_actions');
});
