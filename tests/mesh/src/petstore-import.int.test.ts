/**
 * Issue 4, must-show 5: the pet store's OpenAPI document imported through the management API becomes
 * plugins an agent calls end to end, against a recording server standing in for the pet store.
 */
import { readFileSync } from 'node:fs';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, eventTypes, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const corpus = new URL('../../../../shared/openapi-corpus/petstore3-swagger-api.yaml', import.meta.url);
const PET_KEY = 'canary-petstore-key-77c1';

let mesh: Mesh;
let petstore: RecordingApi;
let model: ScriptedModel;

beforeAll(async () => {
  petstore = await startRecordingApi({
    routes: [
      { method: 'PUT', path: '/api/v3/user/:username', reply: { status: 200, body: { updated: true } } },
      {
        method: 'GET',
        path: '/api/v3/pet/findByStatus',
        reply: { status: 200, body: [{ id: 7, name: 'Rex', status: 'available' }] },
      },
      { method: 'GET', path: '/api/v3/pet/:petId', reply: { status: 200, body: { id: 7, name: 'Rex' } } },
    ],
  });
  model = await startScriptedModel({ respond: () => ({ content: 'All done.' }) });
  mesh = await startMesh();
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await petstore?.stop();
});

it('imported pet store operations are called by an agent with every argument in its place', async () => {
  const imported = (await (
    await admin(mesh, 'POST', '/plugins/import', {
      document: readFileSync(corpus, 'utf8'),
      base_url: `${petstore.url}/api/v3`,
      name_prefix: 'petstore',
    })
  ).json()) as { imported: { name: string; method: string; path: string }[]; credentials: string[] };
  expect(imported.imported).toHaveLength(19);
  const nameOf = (method: string, path: string): string =>
    imported.imported.find((op) => op.method === method && op.path === path)!.name;
  const updateUser = nameOf('PUT', '/user/{username}');
  const findByStatus = nameOf('GET', '/pet/findByStatus');
  const getPet = nameOf('GET', '/pet/{petId}');
  const apiKeyCredential = imported.credentials.find((name) => /API_KEY/i.test(name));
  expect(apiKeyCredential).toBeDefined();

  await storeModelKey(mesh);
  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/${apiKeyCredential}`, {
    value: PET_KEY,
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'petstore_agent',
    model: scriptedModel(model.baseUrl),
    tools: [updateUser, findByStatus, getPet],
  });

  model.enqueue({
    toolCalls: [
      {
        name: updateUser,
        arguments: { username: 'ann smith', body_username: 'ann', email: 'ann@example.com' },
      },
      { name: findByStatus, arguments: { status: 'available' } },
      { name: getPet, arguments: { petId: 7 } },
    ],
  });
  const response = await submit(mesh, {
    workflow_id: 'petstore_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'tidy the store' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  const events = await sseEvents(mesh, trace_id);
  expect(eventTypes(events).at(-1)).toBe('done');
  const results = events.filter((e) => e.type === 'tool_result').map((e) => e.data as { ok: boolean });
  expect(results).toHaveLength(3);
  expect(results.every((r) => r.ok)).toBe(true);

  const put = petstore.requests.find((r) => r.method === 'PUT')!;
  expect(put.path).toBe('/api/v3/user/ann%20smith');
  expect(put.body).toMatchObject({ username: 'ann', email: 'ann@example.com' });
  const find = petstore.requests.find((r) => r.path === '/api/v3/pet/findByStatus')!;
  expect(find.query).toMatchObject({ status: 'available' });
  // GET /pet/{petId} is secured by the document's `api_key` scheme: the credential goes in its header.
  const get = petstore.requests.find((r) => r.method === 'GET' && r.path === '/api/v3/pet/7')!;
  expect(get.headers.api_key).toBe(PET_KEY);
});
