import { followTaskEvents } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type AssembledTask,
} from '@agentmesh/protocol';
import { startTelemetry, type RunningService, type Telemetry } from '@agentmesh/runtime';
import {
  CollectingMetricReader,
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask, searchTool } from './__fixtures__/tasks.js';
import { ExecutorMetric } from './executor-metrics.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('exec-metrics-1');
const reader = new CollectingMetricReader();

let telemetry: Telemetry;
let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let api: RecordingApi;
let executor: RunningService;

beforeAll(async () => {
  // Registered before the executor starts, as runService does: the runner takes its meter from it.
  telemetry = startTelemetry({ service: 'executor-test', env: {}, metricReaders: [reader] });
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({
    respond: (request) =>
      request.body.messages.some((m) => m.role === 'tool')
        ? { content: 'answer', usage: { prompt_tokens: 30, completion_tokens: 3 } }
        : {
            toolCalls: [{ name: 'search', arguments: { q: 'mesh' } }],
            usage: { prompt_tokens: 10, completion_tokens: 5 },
          },
  });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { body: { hits: 1 } } }],
  });
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, env: { LLM_MAX_RETRIES: '1' } });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
  await telemetry?.shutdown();
});

async function runTask(maxSteps: number): Promise<void> {
  const traceId = newTraceId();
  const task: AssembledTask = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { SEARCH_KEY: 'k', [MODEL_API_KEY_VAULT_ENTRY]: 'm' },
    sealFor: vaultKeys,
    userMessage: `task ${traceId}`,
    tools: [searchTool(api.url)],
    maxSteps,
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const signal = AbortSignal.timeout(20_000);
  for await (const event of followTaskEvents(js, { accountId: ACCOUNT, traceId, signal })) {
    if (isTerminalEvent(event)) return;
  }
  throw new Error(`no terminal event for ${traceId}`);
}

it('when the executor runs a task to done and another past its max_steps, each outcome is counted with its steps, through the telemetry meter provider', async () => {
  await runTask(3);
  await runTask(1);

  // The runner counts a task right after writing its terminal event, which the test may see first.
  await waitFor(async () => (await reader.points(ExecutorMetric.TASKS)).length === 2, {
    timeoutMs: 5_000,
    description: 'both tasks to be counted',
  });
  expect(await reader.points(ExecutorMetric.TASKS)).toEqual(
    expect.arrayContaining([
      { attributes: { outcome: 'done' }, value: 1 },
      { attributes: { outcome: 'max_steps_exceeded' }, value: 1 },
    ]),
  );
  expect(await reader.points(ExecutorMetric.TASK_STEPS)).toEqual(
    expect.arrayContaining([
      { attributes: { outcome: 'done' }, value: expect.objectContaining({ count: 1, sum: 2 }) },
      { attributes: { outcome: 'max_steps_exceeded' }, value: expect.objectContaining({ count: 1, sum: 1 }) },
    ]),
  );
  expect(await reader.points(ExecutorMetric.TOOL_CALLS)).toEqual([
    { attributes: { 'gen_ai.tool.name': 'search', outcome: 'ok' }, value: 1 },
  ]);
  const [modelCalls] = await reader.points(ExecutorMetric.MODEL_CALL_DURATION);
  expect(modelCalls?.value).toMatchObject({ count: 3 });
});
