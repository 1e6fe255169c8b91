/**
 * Seed 001: an HTTP tool's `context_params` receive the task's user_id, trace_id and `input.variables` through
 * the real executor, whatever the model puts in its arguments, and the values stay out of the logs.
 */
import { followTaskEvents } from '@agentmesh/bus';
import {
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type HttpTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const USER_ID = 'user-ctx-8d31f0';
const TENANT = 'tenant-north-5f1c2a';
const vaultKeys = generateVaultKeyPair('context-params-test-1');

let nats: NatsServer;
let client: NatsConnection;
let model: ScriptedModel;
let api: RecordingApi;
let executor: RunningService;
const logLines: string[] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  model = await startScriptedModel({
    respond: (request) =>
      request.body.messages.some((message) => message.role === 'tool')
        ? { content: 'done' }
        : // The model tries to act as someone else with an argument it was not offered: it must not reach the API.
          { toolCalls: [{ name: 'orders', arguments: { user_id: 'admin', q: 'open' } }] },
  });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/orders', reply: { body: { orders: [] } } }],
  });
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: { LLM_MAX_RETRIES: '0' },
    logLines,
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await api?.stop();
  await model?.stop();
  await nats?.stop();
});

it('when a tool maps user_id, trace_id and a variable, the API gets the task values and not the model ones', async () => {
  const js = jetstream(client);
  const orders: HttpTool = {
    type: 'HTTP',
    name: 'orders',
    description: 'lists the user orders',
    parameters: {
      type: 'object',
      properties: { q: { type: 'string' } },
      required: ['q'],
    },
    execution: {
      method: 'GET',
      url: `${api.url}/orders`,
      context_params: [
        { source: 'user_id', target: 'user_id', location: 'query' },
        { source: 'trace_id', target: 'X-Trace-Id', location: 'header' },
        { source: 'variables.tenant', target: 'X-Tenant', location: 'header' },
        { source: 'variables.absent', target: 'X-Absent', location: 'header' },
      ],
    },
  };
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    userId: USER_ID,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key' },
    sealFor: vaultKeys,
    userMessage: 'list my open orders',
    variables: { tenant: TENANT },
    tools: [orders],
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(20_000),
  })) {
    events.push(event);
    if (event.type === 'done' || event.type === 'error') break;
  }

  expect(events.at(-1)?.type).toBe('done');
  expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
    data: { ok: true },
  });
  const [request] = await api.waitForRequests(1);
  expect(request?.query).toEqual({ q: 'open', user_id: USER_ID });
  expect(request?.headers['x-trace-id']).toBe(task.task_meta.trace_id);
  expect(request?.headers['x-tenant']).toBe(TENANT);
  expect(request?.headers['x-absent']).toBeUndefined();
  // What the model was offered holds no trace of the mapping.
  expect(JSON.stringify(model.requests[0]?.body)).not.toMatch(/X-Tenant|variables\.tenant/);
  expect(logLines.length).toBeGreaterThan(0);
  expect(logLines.join('\n')).not.toContain(TENANT);
});
