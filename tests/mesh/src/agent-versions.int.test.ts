/**
 * Agent versions end to end (issue 25): the whole mesh as processes. An agent written three times runs
 * the version a task pins, else the current one; a rollback moves what unpinned tasks run; a finished
 * task keeps reporting the version it ran (status, first event); an assembled task re-published with
 * another version stamped on it, or with another version's tools, opens no vault. Pins over NATS and MCP
 * run the pinned version; a pinned version whose tool was changed since is refused at assembly
 * (AGENT_VERSION_TOOLS_CHANGED) while an unpinned task runs; a schedule posting into a thread adds its
 * turn to the thread.
 */
import { followTaskEvents } from '@agentmesh/bus';
import {
  AssembledTask,
  Buckets,
  newTraceId,
  Streams,
  taskAssembledSubject,
  taskEventLogSubject,
  taskKey,
  type TaskEvent,
} from '@agentmesh/protocol';
import { startScriptedModel, waitFor, type ScriptedModel } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { connect, headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, scriptedModel, storeModelKey, submit, taskStatus } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const FINAL_STATUSES: ReadonlySet<string> = new Set(['done', 'error', 'cancelled']);

let mesh: Mesh;
let model: ScriptedModel;
let nc: NatsConnection;
let js: JetStreamClient;
const captured: Msg[] = [];

beforeAll(async () => {
  // The answer names the system prompt it was given, so each answer says which version ran.
  model = await startScriptedModel({
    respond: (request) => {
      const system = (request.body as { messages: { role: string; content: string }[] }).messages.find(
        (message) => message.role === 'system',
      );
      return { content: `ran with: ${system?.content ?? 'no prompt'}` };
    },
  });
  mesh = await startMesh();
  nc = await connect({ servers: mesh.nats.url });
  js = jetstream(nc);
  nc.subscribe('mesh.tasks.assembled.>', { callback: (_error, msg) => void captured.push(msg) });
  await nc.flush();
  await storeModelKey(mesh);
  for (const name of ['lookup_a', 'lookup_b', 'changing_tool'])
    await putTool(name, `${name}, as first written`);
  // Each version binds other tools, so a version's tools are what a replay with another's changes.
  for (const [prompt, tools] of [
    ['prompt of v1', ['lookup_a']],
    ['prompt of v2', ['lookup_a', 'lookup_b']],
    ['prompt of v3', ['lookup_b']],
  ] as const) {
    await admin(mesh, 'PUT', '/agents/versioned', {
      system_prompt: prompt,
      model: scriptedModel(model.baseUrl),
      tools,
    });
  }
});

/** Writes (or rewrites) a shared HTTP tool the scripted model never calls: only its definition matters. */
async function putTool(name: string, description: string): Promise<void> {
  await admin(mesh, 'PUT', `/tools/${name}`, {
    schema_version: 'v1',
    name,
    description,
    parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
    execution: { method: 'GET', base_url: 'http://127.0.0.1:9/lookup', param_placement: 'query' },
  });
}
afterAll(async () => {
  await nc?.close();
  await mesh?.stop();
  await model?.stop();
});

async function run(workflow: string): Promise<{ traceId: string; events: TaskEvent[] }> {
  const response = await submit(mesh, {
    workflow_id: workflow,
    user_id: 'u1',
    messages: [{ role: 'user', content: 'which are you?' }],
  });
  expect(response.status, await response.clone().text()).toBe(202);
  const { trace_id: traceId } = (await response.json()) as { trace_id: string };
  return { traceId, events: await eventsOf(MESH_ACCOUNT, traceId) };
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

const answerOf = (events: TaskEvent[]): string | undefined => {
  const last = events.at(-1);
  return last?.type === 'done' ? last.data.message : undefined;
};

describe('agent versions across the mesh', () => {
  it('when tasks pin v1 or pin nothing, then the agent is rolled back to v2, each runs its version and the v3 task still says 3', async () => {
    const pinned = await run('versioned@1');
    expect(answerOf(pinned.events)).toBe('ran with: prompt of v1');
    const current = await run('versioned');
    expect(answerOf(current.events)).toBe('ran with: prompt of v3');

    await admin(mesh, 'POST', '/agents/versioned/rollback', { version: 2 });
    const afterRollback = await run('versioned');
    expect(answerOf(afterRollback.events)).toBe('ran with: prompt of v2');

    expect(pinned.events[0]?.agent).toMatchObject({ workflow_id: 'versioned', version: 1 });
    expect(afterRollback.events[0]?.agent).toMatchObject({ version: 2 });
    // The task that ran v3 keeps saying so after the agent moved on: its status and its first event.
    const status = await taskStatus(mesh, current.traceId);
    expect(status).toMatchObject({ status: 'done', agent_version: 3 });
    const replayed = await eventsOf(MESH_ACCOUNT, current.traceId);
    expect(replayed[0]?.agent).toMatchObject({ version: 3, digest: status.agent_digest });
    expect(replayed.slice(1).every((event) => event.agent === undefined)).toBe(true);
  });

  it("when the OpenAI façade's model pins a version, the completion is that version's answer", async () => {
    const completion = async (model: string) =>
      fetch(`${mesh.gatewayUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, messages: [{ role: 'user', content: 'which are you?' }], user: 'u1' }),
      });
    const pinned = await completion('versioned@1');
    expect(pinned.status).toBe(200);
    const body = (await pinned.json()) as { choices: { message: { content: string } }[] };
    expect(body.choices[0]?.message.content).toBe('ran with: prompt of v1');
    expect((await completion('versioned@0')).status).toBe(404);
  });

  it('when a task pins a version the agent does not have, the submission is 404 naming the version and no model is asked', async () => {
    const asked = model.requests.length;
    const response = await submit(mesh, {
      workflow_id: 'versioned@9',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'which are you?' }],
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining('version 9'),
    });
    expect(model.requests.length).toBe(asked);
  });

  it("when an assembled task is re-published stamped with another version's digest, prompt and tools, the vault does not open", async () => {
    const original = await run('versioned@1');
    const v3 = await run('versioned@3');
    const capturedTask = (traceId: string) =>
      AssembledTask.parse(
        captured
          .filter((msg) => msg.subject === taskAssembledSubject(MESH_ACCOUNT))
          .map((msg) => msg.json())
          .find((task) => (task as { task_meta: { trace_id: string } }).task_meta.trace_id === traceId),
      );
    const task = capturedTask(original.traceId);
    const other = capturedTask(v3.traceId);
    const jsm = await jetstreamManager(nc);
    // The status record itself, not the gateway's answer (which reads a stored terminal event as final
    // before the executor's final write lands).
    const recordedStatus = async (traceId: string): Promise<string | undefined> => {
      const entry = await jsm.streams.getMessage(`KV_${Buckets.TASKS}`, {
        last_by_subj: `$KV.${Buckets.TASKS}.${taskKey(MESH_ACCOUNT, traceId)}`,
      });
      return entry === null || entry.data.length === 0 ? undefined : entry.json<{ status: string }>().status;
    };
    const recordFinal = async (traceId: string) =>
      waitFor(async () => FINAL_STATUSES.has((await recordedStatus(traceId)) ?? ''), {
        timeoutMs: 30_000,
        description: "the task's final status write",
      });
    const republish = async (replay: AssembledTask, id: string) => {
      // The earlier run's final status write must land before the purge: after it, it would make the
      // replay look ended, and the replay would only be acked.
      await recordFinal(replay.task_meta.trace_id);
      // A fresh event log and no status record, as if the first run's had expired: the executor opens the
      // task's vault again (a task whose record says it ended is only acked).
      await jsm.streams.purge(Streams.EVENTS.name, {
        filter: taskEventLogSubject(MESH_ACCOUNT, replay.task_meta.trace_id),
      });
      await jsm.streams.purge(`KV_${Buckets.TASKS}`, {
        filter: `$KV.${Buckets.TASKS}.${taskKey(MESH_ACCOUNT, replay.task_meta.trace_id)}`,
      });
      await js.publish(taskAssembledSubject(MESH_ACCOUNT), JSON.stringify(replay), { msgID: id });
      return eventsOf(MESH_ACCOUNT, replay.task_meta.trace_id);
    };

    // Control: the captured task as it was runs again.
    expect(answerOf(await republish(task, `versions-control-${original.traceId}`))).toBe(
      'ran with: prompt of v1',
    );

    // The two versions bind different tools, so the retargeted replay below changes real tools.
    const toolNames = (assembled: AssembledTask) => assembled.runtime_config.tools.map((tool) => tool.name);
    expect(toolNames(task)).toEqual(['lookup_a']);
    expect(toolNames(other)).toEqual(['lookup_b']);
    const asked = model.requests.length;
    // Only the version stamp changed: the version is part of the binding itself.
    const restamped = structuredClone(task);
    restamped.task_meta.agent_version = other.task_meta.agent_version;
    restamped.task_meta.agent_digest = other.task_meta.agent_digest;
    // And another version's prompt and tools with it.
    const retargeted = structuredClone(restamped);
    retargeted.input = other.input;
    retargeted.runtime_config.tools = other.runtime_config.tools;
    for (const [replay, id] of [
      [restamped, 'restamped'],
      [retargeted, 'retargeted'],
    ] as const) {
      expect(await republish(replay, `versions-${id}-${original.traceId}`)).toEqual([
        expect.objectContaining({
          type: 'error',
          data: expect.objectContaining({ code: 'TASK_BINDING_MISMATCH' }),
        }),
      ]);
    }
    expect(model.requests.length).toBe(asked);
  });

  it('when a task pins a version over NATS (mesh.gateway.submit), it runs that version and its status records it', async () => {
    const traceId = newTraceId();
    const headers = natsHeaders();
    headers.set('x-account-id', MESH_ACCOUNT);
    headers.set('x-account-type', 'user');
    const reply = await nc.request(
      'mesh.gateway.submit',
      JSON.stringify({
        workflow_id: 'versioned@1',
        user_id: 'u1',
        trace_id: traceId,
        messages: [{ role: 'user', content: 'which are you?' }],
      }),
      { headers, timeout: 10_000 },
    );
    expect(reply.json<{ trace_id: string }>().trace_id).toBe(traceId);
    const events = await eventsOf(MESH_ACCOUNT, traceId);
    expect(answerOf(events)).toBe('ran with: prompt of v1');
    expect(events[0]?.agent).toMatchObject({ workflow_id: 'versioned', version: 1 });
    await waitFor(async () => (await taskStatus(mesh, traceId)).status === 'done', {
      description: 'the NATS task done',
    });
    expect(await taskStatus(mesh, traceId)).toMatchObject({ status: 'done', agent_version: 1 });
  });

  it("when an MCP client calls the agent's tool with a version, the answer is that version's", async () => {
    // An MCP call runs as the account's user `mcp`.
    await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/mcp/credentials/MODEL_KEY`, {
      value: 'model-key',
    });
    const client = new Client({ name: 'versions-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL('/mcp', mesh.gatewayUrl), {
        requestInit: { headers: { authorization: `Bearer ${mesh.apiKey}` } },
      }),
    );
    try {
      const result = (await client.callTool({
        name: 'run_versioned',
        arguments: { message: 'which are you?', version: 1 },
      })) as CallToolResult;
      expect(result.isError ?? false, JSON.stringify(result)).toBe(false);
      expect(JSON.stringify(result.content)).toContain('ran with: prompt of v1');
    } finally {
      await client.close();
    }
  });

  it('when a tool a version bound was changed since, a task pinning that version is refused naming the tool, and an unpinned task runs', async () => {
    await admin(mesh, 'PUT', '/agents/tooled', {
      system_prompt: 'tooled prompt',
      model: scriptedModel(model.baseUrl),
      tools: ['changing_tool', 'lookup_a'],
    });
    // Control: the tools are as version 1 recorded them.
    expect(answerOf((await run('tooled@1')).events)).toBe('ran with: tooled prompt');

    await putTool('changing_tool', 'changing_tool, rewritten after version 1');
    const asked = model.requests.length;
    const pinned = await run('tooled@1');
    expect(pinned.events).toEqual([
      expect.objectContaining({
        type: 'error',
        data: expect.objectContaining({
          code: 'AGENT_VERSION_TOOLS_CHANGED',
          retryable: false,
          message: expect.stringContaining('changing_tool'),
          detail: { workflow_id: 'tooled', version: 1, tools: ['changing_tool'] },
        }),
      }),
    ]);
    expect(model.requests.length).toBe(asked);

    // Unpinned: the current version with the current tools, as before, and its status says which it ran.
    const current = await run('tooled');
    expect(answerOf(current.events)).toBe('ran with: tooled prompt');
    const version = (await (await admin(mesh, 'GET', '/agents/tooled/versions/1')).json()) as {
      tool_digests: Record<string, string>;
    };
    await waitFor(async () => (await taskStatus(mesh, current.traceId)).status === 'done', {
      description: 'the unpinned task done',
    });
    const ran = (await taskStatus(mesh, current.traceId)).tool_digests;
    expect(Object.keys(ran ?? {}).sort()).toEqual(['changing_tool', 'lookup_a']);
    expect(ran?.lookup_a).toBe(version.tool_digests.lookup_a);
    expect(ran?.changing_tool).not.toBe(version.tool_digests.changing_tool);
  });

  it("when a schedule names a thread, its firing runs in the thread and the thread's messages grow by the turn", async () => {
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${mesh.gatewayUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${mesh.apiKey}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    const thread = await call('POST', '/v1/threads', {});
    expect(thread.status).toBe(201);
    const threadId = thread.body.thread_id as string;
    const messagesOf = async () =>
      ((await call('GET', `/v1/threads/${threadId}`)).body.messages ?? []) as unknown[];
    const scheduleId = (body: Record<string, unknown>) => body.schedule_id as string;
    const traceOf = (body: Record<string, unknown>) => body.trace_id as string;
    expect(await messagesOf()).toEqual([]);

    const schedule = await call('POST', '/v1/schedules', {
      cron: '0 8 * * *',
      timezone: 'Europe/Berlin',
      workflow_id: 'versioned@1',
      thread_id: threadId,
      paused: true,
      input: { user_id: 'u1', messages: [{ role: 'user', content: 'the daily report' }] },
    });
    expect(schedule.status).toBe(201);
    const ran = await call('POST', `/v1/schedules/${scheduleId(schedule.body)}/run`, {});
    expect(ran.status).toBe(202);
    const events = await eventsOf(MESH_ACCOUNT, traceOf(ran.body));
    expect(answerOf(events)).toBe('ran with: prompt of v1');
    expect(await taskStatus(mesh, traceOf(ran.body))).toMatchObject({ thread_id: threadId });
    await waitFor(async () => (await messagesOf()).length === 2, {
      description: "the firing's turn in the thread",
    });
    expect(await messagesOf()).toEqual([
      expect.objectContaining({ role: 'user', content: 'the daily report' }),
      expect.objectContaining({ role: 'assistant', content: 'ran with: prompt of v1' }),
    ]);
  });
});
