/**
 * The must-show of human approval: a task whose tool call needs approval parks (`approval_requested`,
 * status `waiting_approval`, no executor holding it); the executor that parked it is killed (SIGKILL) while
 * it waits; a person approves through the HTTP API; the task resumes on the other executor and the tool
 * runs exactly once. A denied call reaches the model as a tool error carrying the approver's comment, and
 * the task goes on.
 */
import { MeshClient } from '@agentmesh/client';
import type { TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  admin,
  registerQueryTool,
  scriptedModel,
  sseEvents,
  storeModelKey,
  taskStatus,
} from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;

interface ChatBody {
  messages?: { role: string; content?: string | null }[];
}
const lastMessage = (body: unknown) => (body as ChatBody).messages?.at(-1);
const userText = (body: unknown) =>
  (body as ChatBody).messages?.find((message) => message.role === 'user')?.content;

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const last = lastMessage(request.body);
      if (last?.role !== 'tool') {
        // "pay <amount>": the model pays that amount.
        const amount = String(userText(request.body) ?? '').replace(/\D/g, '');
        return { toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { amount: Number(amount) } }] };
      }
      return { content: `after the payment: ${last.content ?? ''}` };
    },
  });
  mesh = await startMesh({
    executors: 2,
    env: { executor: { ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '500', PULL_EXPIRES_MS: '1000' } },
  });
  await storeModelKey(mesh);
  await registerQueryTool(mesh, {
    name: 'pay',
    description: 'pays an amount',
    url: `${api.url}/pay`,
    parameter: 'amount',
    type: 'number',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'paying_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['pay'],
    // The agent's binding of the tool asks for approval of large payments only.
    tool_approvals: {
      pay: { when: [{ arg: 'amount', op: 'gt', value: 1000 }], reason: 'a payment above 1000' },
    },
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

async function decide(traceId: string, callId: string, body: unknown): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/approvals/${callId}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function parkedTask(amount: number): Promise<{ traceId: string; received: TaskEvent[] }> {
  const client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
  const task = await client.run({
    workflow_id: 'paying_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: `pay ${amount}` }],
  });
  const received: TaskEvent[] = [];
  void (async () => {
    for await (const event of task.events) received.push(event);
  })().catch(() => undefined);
  await waitFor(() => received.some((event) => event.type === 'approval_requested'), {
    timeoutMs: 30_000,
    description: 'approval_requested',
  });
  await waitFor(async () => (await taskStatus(mesh, task.trace_id)).status === 'waiting_approval', {
    timeoutMs: 10_000,
    description: 'status waiting_approval',
  });
  return { traceId: task.trace_id, received };
}

it('a parked task whose executor is killed while it waits resumes on the other executor once approved, and the tool runs exactly once', async () => {
  const { traceId, received } = await parkedTask(5000);
  const requested = received.find((event) => event.type === 'approval_requested');
  expect(requested).toMatchObject({
    data: { call_id: 'call_pay', tool: 'pay', arguments: { amount: 5000 } },
  });
  expect(JSON.stringify(requested)).toContain('a payment above 1000');
  expect(api.requests).toHaveLength(0);

  const parker = mesh.executors.find((executor) =>
    executor.logs.some((line) => line.trace_id === traceId && line.msg === 'task attempt started'),
  );
  expect(parker).toBeDefined();
  await parker!.stop('SIGKILL');

  const answer = await decide(traceId, 'call_pay', { approve: true, comment: 'ok by finance' });
  expect(answer.status, await answer.clone().text()).toBe(200);

  const events = await sseEvents(mesh, traceId);
  const done = events.at(-1);
  expect(done?.type, JSON.stringify(done)).toBe('done');
  expect(events.filter((event) => event.type === 'done' || event.type === 'error')).toHaveLength(1);
  expect(events.find((event) => event.type === 'approval_decided')).toMatchObject({
    data: { call_id: 'call_pay', approved: true },
  });
  expect(api.requests).toHaveLength(1);
  expect(api.requests[0]!.query).toMatchObject({ amount: '5000' });
  expect(api.requests[0]!.headers['idempotency-key']).toBe(`${traceId}:call_pay`);
  const survivor = mesh.executors.find((executor) => executor !== parker)!;
  expect(survivor.logs.some((line) => line.trace_id === traceId)).toBe(true);
  // Decided once: the same call cannot be decided again.
  expect((await decide(traceId, 'call_pay', { approve: false })).status).toBe(409);
}, 180_000);

it('a denied call reaches the model as a tool error with the comment, the tool does not run, and the task goes on to done', async () => {
  const before = api.requests.length;
  const { traceId } = await parkedTask(7000);
  const answer = await decide(traceId, 'call_pay', { approve: false, comment: 'not this month' });
  expect(answer.status).toBe(200);

  const events = await sseEvents(mesh, traceId);
  const done = events.at(-1);
  expect(done?.type, JSON.stringify(done)).toBe('done');
  const result = events.find((event) => event.type === 'tool_result');
  expect(result).toMatchObject({ data: { call_id: 'call_pay', ok: false } });
  expect(JSON.stringify(result)).toContain('not this month');
  // The model read the denial and answered after it.
  if (done?.type === 'done') expect(done.data.message).toContain('not this month');
  expect(api.requests.length).toBe(before);
}, 180_000);

it('a small payment runs without approval', async () => {
  const before = api.requests.length;
  const client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
  const task = await client.run({
    workflow_id: 'paying_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'pay 50' }],
  });
  const events: TaskEvent[] = [];
  for await (const event of task.events) events.push(event);
  expect(events.at(-1)?.type).toBe('done');
  expect(events.some((event) => event.type === 'approval_requested')).toBe(false);
  expect(api.requests.length).toBe(before + 1);
}, 120_000);

it('a task cancelled while it waits for approval ends cancelled, and its call never runs', async () => {
  const before = api.requests.length;
  const { traceId } = await parkedTask(9000);
  const cancel = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/cancel`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mesh.apiKey}` },
  });
  expect(cancel.status, await cancel.clone().text()).toBeLessThan(300);

  const events = await sseEvents(mesh, traceId);
  expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
  // The final status is written after the terminal event is stored.
  await waitFor(async () => (await taskStatus(mesh, traceId)).status === 'cancelled', {
    timeoutMs: 10_000,
    description: 'status cancelled',
  });
  expect((await decide(traceId, 'call_pay', { approve: true })).status).toBe(409);
  expect(api.requests.length).toBe(before);
}, 180_000);
