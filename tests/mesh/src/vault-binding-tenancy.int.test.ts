/**
 * The trust boundary end to end (issue 8): the whole mesh as processes on real NATS, tried as an attacker
 * holding a foothold on the bus or a management key confined to one account. Attacker endpoints are
 * recording servers on loopback; each test asserts they received nothing.
 */
import { followTaskEvents } from '@agentmesh/bus';
import {
  AssembledTask,
  ReceivedTask,
  taskAssembledSubject,
  taskReceivedSubject,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

const CANARY = {
  SEARCH_KEY: 'canary-search-key-61f0c2',
  MODEL_KEY: 'canary-model-key-0e93b7',
  B_MODEL_KEY: 'canary-b-model-key-a4d218',
  A_ACCOUNT_MODEL_KEY: 'canary-a-account-wide-model-key-7c15e0',
} as const;

let mesh: Mesh;
/** The model and API the victims' tasks are configured for. */
let model: ScriptedModel;
let api: RecordingApi;
/** Where an attacker points a re-targeted task; they must never be called. */
let attackerModel: ScriptedModel;
let attackerApi: RecordingApi;
let nc: NatsConnection;
let js: JetStreamClient;
/** Every task message that crossed the bus, as captured by a `mesh.tasks.>` subscription. */
const captured: Msg[] = [];

const searchPlugin = (origin: string) => ({
  schema_version: 'v1',
  name: 'search',
  description: 'searches',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
  execution: { method: 'GET', base_url: `${origin}/search`, param_placement: 'query' },
  auth_config: {
    type: 'api_key',
    mapping: [{ source: 'SEARCH_KEY', target: 'X-Api-Key', location: 'header' }],
  },
});

async function request(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}${path}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

async function eventsOf(accountId: string, traceId: string): Promise<TaskEvent[]> {
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId,
    traceId,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
  }
  return events;
}

async function submitted(response: Response): Promise<string> {
  expect(response.status, await response.clone().text()).toBe(202);
  return ((await response.json()) as { trace_id: string }).trace_id;
}

const capturedTask = <T>(subject: string, traceId: string, schema: { parse(v: unknown): T }): T =>
  schema.parse(
    captured
      .filter((msg) => msg.subject === subject)
      .map((msg) => msg.json())
      .find((task) => (task as { task_meta: { trace_id: string } }).task_meta.trace_id === traceId),
  );

beforeAll(async () => {
  model = await startScriptedModel({
    respond: (request) =>
      (request.body as { messages: { role: string }[] }).messages.at(-1)?.role === 'tool'
        ? { content: 'found it' }
        : { toolCalls: [{ name: 'search', arguments: { q: 'x' } }] },
  });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { body: { hits: 1 } } }],
  });
  attackerModel = await startScriptedModel({ respond: () => ({ content: 'thanks for the key' }) });
  attackerApi = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { body: { stolen: true } } }],
  });
  mesh = await startMesh();
  nc = await connect({ servers: mesh.nats.url });
  js = jetstream(nc);
  nc.subscribe('mesh.tasks.>', { callback: (_error, msg) => void captured.push(msg) });
  await nc.flush();

  await admin(mesh, 'PUT', '/plugins/search', searchPlugin(api.url));
  await admin(mesh, 'PUT', '/agents/searcher', {
    workflow_id: 'searcher',
    model: { model_name: 'm', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
    tools: ['search'],
  });
  await admin(mesh, 'PUT', '/accounts/acme/users/u1/credentials/SEARCH_KEY', { value: CANARY.SEARCH_KEY });
  await admin(mesh, 'PUT', '/accounts/acme/users/u1/credentials/MODEL_KEY', { value: CANARY.MODEL_KEY });
}, 120_000);

afterAll(async () => {
  await nc?.drain();
  await mesh?.stop();
  await Promise.all([model?.stop(), api?.stop(), attackerModel?.stop(), attackerApi?.stop()]);
});

function expectAttackerGotNothing(): void {
  expect(attackerModel.requests).toEqual([]);
  expect(attackerApi.requests).toEqual([]);
}

describe('a captured task re-published with another account and new URLs', () => {
  it('an assembled task replayed under another account, with its tool URL and model base_url pointed elsewhere, ends with TASK_BINDING_MISMATCH and the new URLs receive zero requests', async () => {
    const traceId = await submitted(
      await request(
        'POST',
        '/v1/tasks',
        { authorization: `Bearer ${mesh.apiKey}` },
        {
          workflow_id: 'searcher',
          user_id: 'u1',
          messages: [{ role: 'user', content: 'find x' }],
        },
      ),
    );
    expect((await eventsOf('acme', traceId)).at(-1)?.type).toBe('done');
    const original = capturedTask(taskAssembledSubject('acme'), traceId, AssembledTask);

    const replayed = structuredClone(original);
    replayed.task_meta.account_id = 'globex';
    replayed.runtime_config.model.base_url = attackerModel.baseUrl;
    for (const tool of replayed.runtime_config.tools) {
      if (tool.type === 'HTTP') tool.execution.url = `${attackerApi.url}/search`;
    }
    await js.publish(taskAssembledSubject('globex'), JSON.stringify(replayed), {
      msgID: `replay-1-${traceId}`,
    });

    const events = await eventsOf('globex', traceId);
    expect(events).toEqual([
      expect.objectContaining({
        type: 'error',
        data: expect.objectContaining({ code: 'TASK_BINDING_MISMATCH' }),
      }),
    ]);
    expectAttackerGotNothing();
  });

  it('a pre-assembled task replayed on mesh.tasks.received under another account, retargeted, passes the assembler and is refused by the executor; the new URLs receive zero requests', async () => {
    const response = await request(
      'POST',
      '/v1/tasks',
      { authorization: `Bearer ${mesh.adminKey}`, 'x-account-id': 'ruoyi' },
      {
        task_meta: { workflow_id: 'ruoyi_flow', user_id: '10086' },
        input: { messages: [{ role: 'user', content: 'find y' }] },
        runtime_config: {
          model: { model_name: 'm', base_url: model.baseUrl, api_key: CANARY.MODEL_KEY },
          tools: [
            {
              type: 'HTTP',
              name: 'search',
              description: 'searches',
              parameter_schema: { type: 'object', properties: { q: { type: 'string' } } },
              execution_config: {
                method: 'GET',
                url: `${api.url}/search`,
                auth_config: { source: 'SEARCH_KEY', target: 'X-Api-Key' },
              },
            },
          ],
          vault: { SEARCH_KEY: CANARY.SEARCH_KEY },
        },
      },
    );
    const traceId = await submitted(response);
    expect((await eventsOf('ruoyi', traceId)).at(-1)?.type).toBe('done');
    const original = capturedTask(taskReceivedSubject('ruoyi'), traceId, ReceivedTask);

    const replayed = structuredClone(original);
    replayed.task_meta.account_id = 'globex';
    replayed.runtime_config!.model.base_url = attackerModel.baseUrl;
    for (const tool of replayed.runtime_config!.tools) {
      if (tool.type === 'HTTP') tool.execution.url = `${attackerApi.url}/search`;
    }
    await js.publish(taskReceivedSubject('globex'), JSON.stringify(replayed), {
      msgID: `replay-2-${traceId}`,
    });

    const events = await eventsOf('globex', traceId);
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'TASK_BINDING_MISMATCH' } });
    expectAttackerGotNothing();
  });
});

describe('tenancy', () => {
  it("a caller confined to account A re-pointing B's agent changes only A's own copy: B's next task sends B's model key to B's model, and A's URL receives nothing", async () => {
    const asB = { 'x-account-id': 'tenant_b' };
    const asA = { 'x-account-id': 'tenant_a' };
    const bAgent = {
      workflow_id: 'support',
      model: { model_name: 'm', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
      tools: [],
    };
    const credential = '/v1/admin/accounts/tenant_b/users/u1/credentials/MODEL_KEY';
    expect((await request('PUT', '/v1/admin/agents/support', asB, bAgent)).status).toBe(201);
    expect((await request('PUT', credential, asB, { value: CANARY.B_MODEL_KEY })).status).toBe(204);
    // A, confined to its own account, aims at B's agent id with its own model URL...
    const attack = await request('PUT', '/v1/admin/agents/support', asA, {
      ...bAgent,
      model: { ...bAgent.model, base_url: attackerModel.baseUrl },
    });
    expect(attack.status).toBe(201);
    // ...and cannot touch B's credentials.
    expect((await request('PUT', credential, asA, { value: 'overwritten' })).status).toBe(403);

    const traceId = await submitted(
      await request('POST', '/v1/tasks', asB, {
        workflow_id: 'support',
        user_id: 'u1',
        messages: [{ role: 'user', content: 'help b' }],
      }),
    );
    expect((await eventsOf('tenant_b', traceId)).at(-1)?.type).toBe('done');
    const bCall = model.requests.find((request) => JSON.stringify(request.body).includes('help b'));
    expect(bCall?.headers['authorization']).toBe(`Bearer ${CANARY.B_MODEL_KEY}`);
    expectAttackerGotNothing();
  });

  it("an account-wide credential of A is sealed into A's tasks only: a caller confined to B cannot list, overwrite or delete it, and B's task of the same agent ends CREDENTIALS_MISSING naming B while the model never sees A's key for it", async () => {
    const asA = { 'x-account-id': 'wide_a' };
    const asB = { 'x-account-id': 'wide_b' };
    await admin(mesh, 'PUT', '/agents/wide_helper', {
      workflow_id: 'wide_helper',
      model: { model_name: 'm', base_url: model.baseUrl, api_key_credential: 'WIDE_MODEL_KEY' },
      tools: [],
    });
    const aSet = '/v1/admin/accounts/wide_a/credentials';
    expect(
      (await request('PUT', `${aSet}/WIDE_MODEL_KEY`, asA, { value: CANARY.A_ACCOUNT_MODEL_KEY })).status,
    ).toBe(204);

    // B, confined to its own account, can neither read A's set nor change it.
    expect((await request('GET', aSet, asB)).status).toBe(403);
    expect((await request('PUT', `${aSet}/WIDE_MODEL_KEY`, asB, { value: 'overwritten' })).status).toBe(403);
    expect((await request('DELETE', `${aSet}/WIDE_MODEL_KEY`, asB)).status).toBe(403);
    expect(await (await request('GET', aSet, asA)).json()).toEqual({ names: ['WIDE_MODEL_KEY'] });

    const task = (user: string, content: string) => ({
      workflow_id: 'wide_helper',
      user_id: user,
      messages: [{ role: 'user', content }],
    });
    const bTrace = await submitted(await request('POST', '/v1/tasks', asB, task('anyone', 'wide b asks')));
    const bEvents = await eventsOf('wide_b', bTrace);
    expect(bEvents).toEqual([
      expect.objectContaining({
        type: 'error',
        data: expect.objectContaining({
          code: 'CREDENTIALS_MISSING',
          detail: {
            missing: ['WIDE_MODEL_KEY'],
            account_id: 'wide_b',
            user_id: 'anyone',
            looked_in: ['user', 'account'],
          },
        }),
      }),
    ]);
    expect(model.requests.filter((call) => JSON.stringify(call.body).includes('wide b asks'))).toEqual([]);

    // A's task, for a user with no credentials of their own, runs with A's account-wide key.
    const aTrace = await submitted(await request('POST', '/v1/tasks', asA, task('anyone', 'wide a asks')));
    expect((await eventsOf('wide_a', aTrace)).at(-1)?.type).toBe('done');
    const aCalls = model.requests.filter((call) => JSON.stringify(call.body).includes('wide a asks'));
    expect(aCalls.length).toBeGreaterThan(0);
    for (const call of aCalls)
      expect(call.headers['authorization']).toBe(`Bearer ${CANARY.A_ACCOUNT_MODEL_KEY}`);
    // Only A's own task ever carried A's key.
    const carriers = model.requests.filter(
      (call) => call.headers['authorization'] === `Bearer ${CANARY.A_ACCOUNT_MODEL_KEY}`,
    );
    expect(carriers).toEqual(aCalls);
    expectAttackerGotNothing();
  });

  it('two accounts submitting the same trace_id each run their own task; neither sees nor cancels the other', async () => {
    const traceId = 'de'.repeat(16);
    const body = {
      workflow_id: 'searcher',
      user_id: 'u1',
      trace_id: traceId,
      messages: [{ role: 'user', content: 'twin' }],
    };
    const first = await submitted(
      await request('POST', '/v1/tasks', { authorization: `Bearer ${mesh.apiKey}` }, body),
    );
    const second = await submitted(
      await request('POST', '/v1/tasks', { 'x-account-id': 'other_tenant' }, body),
    );
    expect(first).toBe(traceId);
    expect(second).toBe(traceId);
    expect((await eventsOf('acme', traceId)).at(-1)?.type).toBe('done');
    // The other tenant has no agent `searcher` of its own and no credentials: its task ends on its own terms.
    expect((await eventsOf('other_tenant', traceId)).at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'CREDENTIALS_MISSING' },
    });
    const status = await waitFor(async () => {
      const res = await request('GET', `/v1/tasks/${traceId}`, { authorization: `Bearer ${mesh.apiKey}` });
      const record = (await res.json()) as { status: string; account_id: string };
      return record.status === 'done' ? record : undefined;
    });
    expect(status.account_id).toBe('acme');
  });
});
