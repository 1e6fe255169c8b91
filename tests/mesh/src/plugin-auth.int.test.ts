/**
 * Issue 3, must-show 7, through the whole mesh: each auth type of seed 000's `auth_config` reaches the
 * recording API with the user's credentials, and an OAuth2 client-credentials plugin fetches its
 * token once for two calls.
 */
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, eventTypes, sseEvents, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const SECRETS = {
  API_KEY: 'canary-api-key-1',
  BEARER_TOKEN: 'canary-bearer-2',
  BASIC_USER: 'svc-user',
  BASIC_PASS: 'canary-basic-3',
  OAUTH_ID: 'client-4',
  OAUTH_SECRET: 'canary-oauth-5',
  MODEL_KEY: 'model-key',
};

let mesh: Mesh;
let api: RecordingApi;
let model: ScriptedModel;

const plugin = (name: string, path: string, auth: unknown) => ({
  schema_version: 'v1',
  name,
  description: `calls ${path}`,
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  execution: { method: 'GET', base_url: `${api.url}${path}`, param_placement: 'query' },
  auth_config: auth,
});

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/data/:kind', reply: { status: 200, body: { ok: true } } },
      {
        method: 'POST',
        path: '/oauth/token',
        reply: {
          status: 200,
          body: { access_token: 'issued-token-6', token_type: 'Bearer', expires_in: 3600 },
        },
      },
    ],
  });
  model = await startScriptedModel({ respond: () => ({ content: 'authenticated everywhere' }) });
  mesh = await startMesh();
  for (const [name, value] of Object.entries(SECRETS)) {
    await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/${name}`, { value });
  }
  await admin(
    mesh,
    'POST',
    '/plugins',
    plugin('with_api_key', '/data/key', {
      type: 'api_key',
      mapping: [
        { source: 'API_KEY', target: 'X-Api-Key', location: 'header' },
        { source: 'API_KEY', target: 'key', location: 'query' },
      ],
    }),
  );
  await admin(
    mesh,
    'POST',
    '/plugins',
    plugin('with_bearer', '/data/bearer', { type: 'bearer', token_source: 'BEARER_TOKEN' }),
  );
  await admin(
    mesh,
    'POST',
    '/plugins',
    plugin('with_basic', '/data/basic', {
      type: 'basic',
      username_source: 'BASIC_USER',
      password_source: 'BASIC_PASS',
    }),
  );
  await admin(
    mesh,
    'POST',
    '/plugins',
    plugin('with_oauth2', '/data/oauth', {
      type: 'oauth2',
      oauth2: {
        token_url: `${api.url}/oauth/token`,
        client_id_source: 'OAUTH_ID',
        client_secret_source: 'OAUTH_SECRET',
        scopes: ['read'],
      },
    }),
  );
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'auth_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: ['with_api_key', 'with_bearer', 'with_basic', 'with_oauth2'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

it('api_key, bearer, basic and oauth2 each reach the API; oauth2 fetches its token once for two calls', async () => {
  model.enqueue({
    toolCalls: [
      { name: 'with_api_key', arguments: { q: '1' } },
      { name: 'with_bearer', arguments: { q: '2' } },
      { name: 'with_basic', arguments: { q: '3' } },
      { name: 'with_oauth2', arguments: { q: '4' } },
    ],
  });
  model.enqueue({ toolCalls: [{ name: 'with_oauth2', arguments: { q: '5' } }] });
  const response = await submit(mesh, {
    workflow_id: 'auth_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'auth' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  const events = await sseEvents(mesh, trace_id);
  expect(eventTypes(events).at(-1)).toBe('done');
  expect(events.filter((e) => e.type === 'tool_result').every((e) => (e.data as { ok: boolean }).ok)).toBe(
    true,
  );

  const on = (kind: string) => api.requests.filter((r) => r.path === `/data/${kind}`);
  expect(on('key')[0]?.headers['x-api-key']).toBe(SECRETS.API_KEY);
  expect(on('key')[0]?.query).toMatchObject({ key: SECRETS.API_KEY, q: '1' });
  expect(on('bearer')[0]?.headers.authorization).toBe(`Bearer ${SECRETS.BEARER_TOKEN}`);
  expect(on('basic')[0]?.headers.authorization).toBe(
    `Basic ${Buffer.from(`${SECRETS.BASIC_USER}:${SECRETS.BASIC_PASS}`).toString('base64')}`,
  );
  expect(on('oauth').map((r) => r.headers.authorization)).toEqual([
    'Bearer issued-token-6',
    'Bearer issued-token-6',
  ]);
  const tokenRequests = api.requests.filter((r) => r.path === '/oauth/token');
  expect(tokenRequests).toHaveLength(1);
  expect(tokenRequests[0]!.bodyText).toContain('grant_type=client_credentials');
  // Nothing of the credentials reached the events.
  const eventText = JSON.stringify(events);
  for (const secret of [
    SECRETS.API_KEY,
    SECRETS.BEARER_TOKEN,
    SECRETS.BASIC_PASS,
    SECRETS.OAUTH_SECRET,
    'issued-token-6',
  ]) {
    expect(eventText).not.toContain(secret);
  }
});
