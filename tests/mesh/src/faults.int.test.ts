/**
 * Faults through the whole mesh: tasks in flight survive a NATS server that dies (SIGKILL) and comes
 * back on the same store (also while a client follows a task with the SDK), and an executor process
 * killed mid-task; each task still ends with exactly one terminal event.
 */
import { MeshClient } from '@agentmesh/client';
import type { TaskEvent } from '@agentmesh/protocol';
import {
  startScriptedModel,
  startRecordingApi,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;

const lastRole = (body: unknown): string | undefined =>
  ((body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role;

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/lookup', delayMs: 300, reply: { status: 200, body: { ok: true } } }],
  });
  // Slow enough that the faults land while tasks run: every answer takes a while to stream.
  model = await startScriptedModel({
    respond: (request) =>
      lastRole(request.body) === 'tool'
        ? { content: 'answer after the tool', chunkSize: 4, chunkDelayMs: 40 }
        : { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }], latencyMs: 200 },
  });
  mesh = await startMesh({
    executors: 2,
    env: { executor: { ACK_WAIT_MS: '4000', ACK_PROGRESS_MS: '1000' } },
  });
  await storeModelKey(mesh);
  await registerQueryTool(mesh, {
    name: 'lookup',
    description: 'slow lookup',
    url: `${api.url}/lookup`,
    parameter: 'q',
    type: 'string',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'slow_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['lookup'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

async function submitMany(count: number, label: string): Promise<string[]> {
  const traces: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await submit(mesh, {
      workflow_id: 'slow_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: `${label}-${i}` }],
    });
    expect(response.status).toBe(202);
    traces.push(((await response.json()) as { trace_id: string }).trace_id);
  }
  return traces;
}

const terminals = (events: TaskEvent[]) => events.filter((e) => e.type === 'done' || e.type === 'error');

it('tasks in flight when the NATS server is killed and restarted all finish, each with one terminal event', async () => {
  const traces = await submitMany(10, 'nats-restart');
  await waitFor(
    () => model.requests.filter((r) => JSON.stringify(r.body).includes('nats-restart')).length >= 3,
    {
      timeoutMs: 30_000,
    },
  );
  await mesh.nats.kill();
  await mesh.nats.restart();
  for (const trace of traces) {
    // While the services reconnect, the gateway answers 502 "retry"; a client retries.
    const events = await waitFor(() => sseEvents(mesh, trace).catch(() => undefined), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    expect(terminals(events), trace).toHaveLength(1);
    expect(events.at(-1)?.type, JSON.stringify(events.at(-1))).toBe('done');
  }
}, 180_000);

it('a client following a task with MeshClient while NATS is killed and restarted gets every event once, ending in done', async () => {
  const client = new MeshClient({
    baseUrl: mesh.gatewayUrl,
    apiKey: mesh.apiKey,
    // A caller that expects outages lets the stream be reopened for longer than the default.
    reconnect: { maxAttempts: 30, maxDelayMs: 1_000 },
  });
  const task = await client.run({
    workflow_id: 'slow_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'client-through-restart' }],
  });
  const received: TaskEvent[] = [];
  const followed = (async () => {
    for await (const event of task.events) received.push(event);
  })();
  await waitFor(() => received.some((event) => event.type === 'tool_start'), { timeoutMs: 30_000 });

  await mesh.nats.kill();
  await mesh.nats.restart();
  await followed;

  expect(terminals(received)).toHaveLength(1);
  expect(received.at(-1)?.type, JSON.stringify(received.at(-1))).toBe('done');
  for (let i = 1; i < received.length; i++) expect(received[i]!.seq).toBeGreaterThan(received[i - 1]!.seq);
  expect(received).toEqual(await sseEvents(mesh, task.trace_id));
}, 180_000);

it('a task whose executor is killed mid-run is redelivered to the other executor and finishes once', async () => {
  const traces = await submitMany(6, 'executor-crash');
  const victim = mesh.executors[0]!;
  await waitFor(
    () => victim.logs.some((line) => typeof line.trace_id === 'string' && traces.includes(line.trace_id)),
    { timeoutMs: 30_000 },
  );
  await victim.stop('SIGKILL');
  for (const trace of traces) {
    const events = await sseEvents(mesh, trace);
    expect(terminals(events), trace).toHaveLength(1);
    expect(events.at(-1)?.type).toBe('done');
    for (let i = 1; i < events.length; i++) expect(events[i]!.seq).toBeGreaterThan(events[i - 1]!.seq);
  }
}, 180_000);
