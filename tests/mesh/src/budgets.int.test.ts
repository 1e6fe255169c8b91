/**
 * The must-show of budgets, through the whole mesh: an agent's token budget stops its task between model
 * calls with BUDGET_EXCEEDED (step 1's tool ran, the model was not asked again), the task's `step_finished`
 * events reach the client over SSE with their cost, and the usage the executor added to the account's day
 * makes the gateway refuse the account's next task with RATE_LIMITED.
 */
import { AccountUsageStore, openMeshBuckets } from '@agentmesh/bus';
import { utcDay, type TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { status: 200, body: { hits: ['agentmesh'] } } }],
  });
  // Never done on its own: every turn asks for another search, and reports 60 + 40 tokens.
  model = await startScriptedModel({
    respond: () => ({
      toolCalls: [{ name: 'search', arguments: { q: 'agentmesh' } }],
      usage: { prompt_tokens: 60, completion_tokens: 40 },
    }),
  });
  mesh = await startMesh({
    env: {
      executor: {
        MODEL_PRICES: JSON.stringify({ scripted: { input_per_million_usd: 5, output_per_million_usd: 10 } }),
      },
      gateway: { ACCOUNT_DAILY_TOKEN_CAP: '100', ACCOUNT_USAGE_CACHE_MS: '0' },
    },
  });
  await storeModelKey(mesh);
  await registerQueryTool(mesh, {
    name: 'search',
    description: 'searches',
    url: `${api.url}/search`,
    parameter: 'q',
    type: 'string',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'budgeted_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['search'],
    max_steps: 10,
    max_total_tokens: 100,
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

const task = {
  workflow_id: 'budgeted_agent',
  user_id: 'u1',
  messages: [{ role: 'user', content: 'search until told to stop' }],
  // Larger than the agent's: the agent's 100 applies.
  limits: { max_total_tokens: 5_000 },
};

it("an agent's token budget stops its task between steps with BUDGET_EXCEEDED, and the account's next task is refused at its daily token cap", async () => {
  const submitted = await submit(mesh, task);
  expect(submitted.status).toBe(202);
  const { trace_id: traceId } = (await submitted.json()) as { trace_id: string };
  const events: TaskEvent[] = await sseEvents(mesh, traceId);

  // Step 1 used the 100 tokens: its search ran, and the model was not asked a second time.
  expect(model.requests.filter((request) => request.outcome !== 'models')).toHaveLength(1);
  expect(api.requests).toHaveLength(1);
  const framing = events.filter((event) => event.type !== 'tool_call_delta');
  expect(framing.map((event) => event.type)).toEqual(['step_finished', 'tool_start', 'tool_result', 'error']);
  expect(framing[0]!.data).toEqual({
    step: 1,
    finish_reason: 'tool_calls',
    // The model that answered (an agent's model may be a fallback list).
    model: 'scripted',
    usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 },
    cost_usd: 0.0007,
    total_usage: { prompt_tokens: 60, completion_tokens: 40, total_tokens: 100 },
    total_cost_usd: 0.0007,
  });
  expect(events.at(-1)!.data).toMatchObject({ code: 'BUDGET_EXCEEDED', retryable: false });
  expect((events.at(-1)!.data as { message: string }).message).toContain('100 tokens of its budget of 100');

  // The executor adds the task's usage to the account's day once the terminal event is stored.
  const nc = await connect({ servers: mesh.nats.url });
  try {
    const { accountUsage } = await openMeshBuckets(jetstream(nc), { only: ['accountUsage'] });
    const store = new AccountUsageStore(accountUsage);
    await waitFor(async () => (await store.get(MESH_ACCOUNT, utcDay(new Date()))).tasks === 1, {
      timeoutMs: 10_000,
      description: "the task's usage added to the account's day",
    });
  } finally {
    await nc.close();
  }
  const refused = await submit(mesh, task);
  expect(refused.status).toBe(429);
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await refused.json()).toMatchObject({
    code: 'RATE_LIMITED',
    detail: { scope: 'account_daily_tokens', used_tokens: 100, cap_tokens: 100 },
  });
});
