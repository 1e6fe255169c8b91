/**
 * Agents calling agents, on the whole mesh (gateway, assembler, executor as processes, spans exported over
 * OTLP to a recording collector): a parent agent lists a sub-agent in `sub_agents`; the model calls it as
 * the tool `agent_<workflow_id>`; the call runs a sub-task (through the gateway, like any task) whose agent
 * calls an HTTP tool on loopback; the sub-task's answer is the call's result and the parent answers with
 * it. Every span of both tasks is in the root task's one trace. Cancelling the parent over HTTP while its
 * sub-task runs cancels the sub-task too. An executor killed while a parent waits for its sub-task: the
 * parent resumes on another executor and re-attaches to the same sub-task instead of starting a second.
 */
import { MeshClient } from '@agentmesh/client';
import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  admin,
  expectStrictlyIncreasing,
  registerQueryTool,
  sseEvents,
  submit,
  taskStatus,
} from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

let mesh: Mesh;
let collector: RecordingApi;
let model: ScriptedModel;
let api: RecordingApi;
let releaseSlowAnswer!: () => void;
const slowAnswer = new Promise<void>((resolve) => (releaseSlowAnswer = resolve));
let releaseHeldAnswer!: () => void;
const heldAnswer = new Promise<void>((resolve) => (releaseHeldAnswer = resolve));

/** Who is asking: each agent's system prompt names it. */
function agentOf(request: { body: unknown }): string {
  const body = request.body as ChatCompletionRequest['body'] | undefined;
  const system = body?.messages?.find((message) => message.role === 'system');
  return typeof system?.content === 'string' ? system.content : '';
}

function lastMessage(request: ChatCompletionRequest): { role: string; content?: unknown } {
  return request.body.messages.at(-1) as { role: string; content?: unknown };
}

beforeAll(async () => {
  collector = await startRecordingApi({
    routes: [{ method: 'POST', path: '/v1/traces', reply: { status: 200, body: {} } }],
  });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/facts', reply: { status: 200, body: { fact: 'the-answer-is-42' } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const agent = agentOf(request);
      const last = lastMessage(request);
      const answered = last.role === 'tool' ? String(last.content) : undefined;
      const subOf: Record<string, string> = {
        PARENT: 'agent_researcher',
        'SLOW PARENT': 'agent_slow_researcher',
        'RESUMED PARENT': 'agent_held_researcher',
      };
      if (subOf[agent] !== undefined) {
        if (answered === undefined) {
          const sub = subOf[agent];
          return { toolCalls: [{ name: sub, arguments: { input: 'what is the answer?' } }] };
        }
        return { content: `parent relays: ${answered}` };
      }
      if (agent === 'RESEARCHER') {
        if (answered === undefined) return { toolCalls: [{ name: 'facts', arguments: { q: 'answer' } }] };
        return { content: `researcher found ${answered.includes('the-answer-is-42') ? '42' : 'nothing'}` };
      }
      if (agent === 'HELD RESEARCHER') {
        // Held until its executor has been killed; asked again after the takeover, it answers at once.
        return { content: 'held answer 7', chunkSize: 4, hold: { afterChunks: 1, until: heldAnswer } };
      }
      if (agent === 'SLOW RESEARCHER') {
        // Streams one chunk, then waits until the test ends: the sub-task is running when it is cancelled.
        return {
          content: 'thinking about it for a long while',
          chunkSize: 4,
          hold: { afterChunks: 1, until: slowAnswer },
        };
      }
      return undefined;
    },
  });
  mesh = await startMesh({
    // A quick takeover of a killed executor's tasks.
    env: { executor: { ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '500', PULL_EXPIRES_MS: '1000' } },
    common: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  await registerQueryTool(mesh, {
    name: 'facts',
    description: 'looks a fact up',
    url: `${api.url}/facts`,
    parameter: 'q',
    type: 'string',
  });
  const agent = (workflowId: string, prompt: string, extra: Record<string, unknown>) =>
    admin(mesh, 'POST', '/agents', {
      workflow_id: workflowId,
      system_prompt: prompt,
      model: { model_name: 'scripted', base_url: model.baseUrl },
      ...extra,
    });
  await agent('researcher', 'RESEARCHER', { description: 'Researches facts', tools: ['facts'] });
  await agent('slow_researcher', 'SLOW RESEARCHER', { description: 'Researches slowly' });
  await agent('parent', 'PARENT', { sub_agents: ['researcher'] });
  await agent('slow_parent', 'SLOW PARENT', { sub_agents: ['slow_researcher'] });
  await agent('held_researcher', 'HELD RESEARCHER', {});
  await agent('resumed_parent', 'RESUMED PARENT', { sub_agents: ['held_researcher'] });
}, 180_000);

afterAll(async () => {
  releaseSlowAnswer();
  releaseHeldAnswer();
  await mesh?.stop();
  await Promise.all([collector?.stop(), api?.stop(), model?.stop()]);
});

function exportedSpans(): { service: string; span: OtlpSpan }[] {
  return collector.requests.flatMap((request) =>
    ((request.body as OtlpExport | undefined)?.resourceSpans ?? []).flatMap((resourceSpans) => {
      const service =
        resourceSpans.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
      return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
        (scope.spans ?? []).map((span) => ({ service, span })),
      );
    }),
  );
}

async function submitTask(workflowId: string): Promise<string> {
  const response = await submit(mesh, {
    workflow_id: workflowId,
    user_id: 'u1',
    messages: [{ role: 'user', content: 'ask your sub-agent' }],
  });
  expect(response.status).toBe(202);
  return ((await response.json()) as { trace_id: string }).trace_id;
}

describe('agents calling agents', () => {
  it("when a parent agent calls a sub-agent that calls an HTTP tool, the parent answers with the sub-agent's answer, and every span of both tasks is in one trace", async () => {
    const parentId = await submitTask('parent');
    const events = await sseEvents(mesh, parentId);

    expect(expectStrictlyIncreasing(events)).toBe(true);
    const started = events.find((event) => event.type === 'subtask_started');
    const finished = events.find((event) => event.type === 'subtask_finished');
    expect(started).toMatchObject({ data: { tool: 'agent_researcher', workflow_id: 'researcher' } });
    const subId = (started as Extract<TaskEvent, { type: 'subtask_started' }>).data.subtask_trace_id;
    expect(subId).not.toBe(parentId);
    expect(finished).toMatchObject({ data: { subtask_trace_id: subId, status: 'done' } });
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      data: { tool: 'agent_researcher', ok: true, result: 'researcher found 42' },
    });
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    expect((events.at(-1) as Extract<TaskEvent, { type: 'done' }>).data.message).toMatch(
      /^parent relays: .*researcher found 42/,
    );

    // The sub-task is a task of its own: its events on its own stream, linked to its parent.
    const subEvents = await sseEvents(mesh, subId);
    expect(subEvents.find((event) => event.type === 'tool_result')).toMatchObject({
      data: { tool: 'facts', ok: true },
    });
    expect(subEvents.at(-1)).toMatchObject({ type: 'done', data: { message: 'researcher found 42' } });
    expect(api.requests.filter((request) => request.path === '/facts')).toHaveLength(1);
    expect(await taskStatus(mesh, subId)).toMatchObject({ status: 'done', parent_trace_id: parentId });

    const agentSpans = await waitFor(
      () => {
        const names = exportedSpans().map(({ span }) => span);
        const invoked = names.filter((span) => span.name.startsWith('invoke_agent'));
        const parent = invoked.find((span) => span.name === 'invoke_agent parent');
        const sub = invoked.find((span) => span.name === 'invoke_agent researcher');
        return parent && sub ? { parent, sub } : undefined;
      },
      { timeoutMs: 20_000, description: 'the invoke_agent spans of both tasks' },
    );
    expect(agentSpans.parent.traceId).toBe(parentId);
    expect(agentSpans.sub.traceId).toBe(parentId);
    const inTrace = await waitFor(
      () => {
        const spans = exportedSpans().filter(({ span }) => span.traceId === parentId);
        const count = (name: string) => spans.filter(({ span }) => span.name === name).length;
        return count('gateway.submit') >= 2 && count('assemble') >= 2 ? spans : undefined;
      },
      { timeoutMs: 20_000, description: "both tasks' gateway and assembler spans in the root trace" },
    );
    expect(new Set(inTrace.map(({ service }) => service))).toEqual(
      new Set(['gateway', 'assembler', 'executor']),
    );
    expect(inTrace.some(({ span }) => span.name === 'execute_tool facts')).toBe(true);
    // The sub-task's gateway span hangs under the parent's call of the agent tool.
    const call = inTrace.find(({ span }) => span.name === 'execute_tool agent_researcher')!;
    const submits = inTrace.filter(({ span }) => span.name === 'gateway.submit');
    expect(submits.some(({ span }) => span.parentSpanId === call.span.spanId)).toBe(true);
    expect(exportedSpans().filter(({ span }) => span.traceId === subId)).toEqual([]);
  });

  it('when the parent is cancelled over HTTP while its sub-task runs, the sub-task ends cancelled too', async () => {
    const parentId = await submitTask('slow_parent');
    const parentEvents = sseEvents(mesh, parentId);
    const sub = await waitFor(
      async () => {
        const response = await fetch(`${mesh.gatewayUrl}/v1/tasks?limit=50`, {
          headers: { authorization: `Bearer ${mesh.apiKey}` },
        });
        const { tasks } = (await response.json()) as { tasks: TaskStatusRecord[] };
        return tasks.find((task) => task.parent_trace_id === parentId && task.status === 'running');
      },
      { timeoutMs: 30_000, description: 'the running sub-task of the slow parent' },
    );
    await waitFor(() => model.requests.some((request) => agentOf(request) === 'SLOW RESEARCHER'), {
      timeoutMs: 20_000,
      description: "the sub-agent's model call",
    });

    const cancel = await fetch(`${mesh.gatewayUrl}/v1/tasks/${parentId}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    expect(cancel.status).toBe(202);

    expect((await parentEvents).at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    const subEvents = await sseEvents(mesh, sub.trace_id);
    expect(subEvents.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(subEvents.filter((event) => event.type === 'done' || event.type === 'error')).toHaveLength(1);
    // The final status is written after the terminal event is stored.
    const subStatus = await waitFor(
      async () => {
        const record = await taskStatus(mesh, sub.trace_id);
        return record.status === 'cancelled' ? record : undefined;
      },
      { timeoutMs: 10_000, description: "the sub-task's final status" },
    );
    expect(subStatus).toMatchObject({ status: 'cancelled', parent_trace_id: parentId });
  });

  it('when the executor dies while a parent waits for its sub-task, the resumed parent re-attaches to the same sub-task: one sub-task, and the parent answers with its answer', async () => {
    const client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
    const task = await client.run({
      workflow_id: 'resumed_parent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'ask your sub-agent' }],
    });
    const parentId = task.trace_id;
    const received: TaskEvent[] = [];
    const followed = (async () => {
      for await (const event of task.events) received.push(event);
    })().catch((error: unknown) => error);
    await waitFor(() => received.some((event) => event.type === 'subtask_started'), {
      timeoutMs: 30_000,
      description: 'subtask_started',
    });
    await waitFor(() => model.requests.some((request) => agentOf(request) === 'HELD RESEARCHER'), {
      timeoutMs: 20_000,
      description: "the sub-agent's model call",
    });

    const [victim] = mesh.executors.splice(0);
    await victim!.stop('SIGKILL');
    releaseHeldAnswer();
    await mesh.addExecutor();
    expect(await followed).toBeUndefined();

    const events = await sseEvents(mesh, parentId);
    const done = events.at(-1);
    expect(done?.type, JSON.stringify(done)).toBe('done');
    expect((done as Extract<TaskEvent, { type: 'done' }>).data.message).toContain('held answer 7');
    const starts = events.filter((event) => event.type === 'subtask_started');
    expect(starts.length).toBe(2);
    expect(new Set(starts.map((event) => event.data.subtask_trace_id)).size).toBe(1);
    const takeover = events.find((event) => event.type === 'attempt_started');
    expect(takeover).toMatchObject({ data: { rerun_call_ids: [starts[0]!.data.call_id] } });
    const response = await fetch(`${mesh.gatewayUrl}/v1/tasks?limit=100`, {
      headers: { authorization: `Bearer ${mesh.apiKey}` },
    });
    const { tasks } = (await response.json()) as { tasks: TaskStatusRecord[] };
    const children = tasks.filter((record) => record.parent_trace_id === parentId);
    expect(children.map((record) => record.trace_id)).toEqual([starts[0]!.data.subtask_trace_id]);
    expect(children[0]!.status).toBe('done');
  }, 120_000);
});
