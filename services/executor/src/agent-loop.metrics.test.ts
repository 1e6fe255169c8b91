import {
  CollectingMetricReader,
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type RouteSpec,
  type ScriptedModel,
  type ScriptedModelOptions,
} from '@agentmesh/testkit';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { searchTool } from './__fixtures__/tasks.js';
import { runAgentLoop, type LoopOutcome } from './agent-loop.js';
import { ExecutorMetric, ExecutorMetrics, type TaskMetrics } from './executor-metrics.js';
import { OpenAiChatClient } from './llm/index.js';
import { NativeToolRegistry } from './tools/native/index.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';

const SEARCH_KEY = 'canary-metric-key-3a91';
const ARGUMENT_TEXT = 'canary-metric-argument-8c2e';
const MODEL = 'scripted-model';

let model: ScriptedModel | undefined;
let api: RecordingApi | undefined;
let httpTools: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), api?.stop(), httpTools?.close()]);
  model = api = httpTools = undefined;
});

/** Runs one task through the loop with fresh instruments, and ends its metering as the runner does. */
async function meteredRun(
  modelOptions: ScriptedModelOptions,
  routes: RouteSpec[],
  maxSteps = 5,
): Promise<{ outcome: LoopOutcome; reader: CollectingMetricReader }> {
  const reader = new CollectingMetricReader();
  const metrics: TaskMetrics = new ExecutorMetrics(
    new MeterProvider({ readers: [reader] }).getMeter('test'),
  ).startTask();
  model = await startScriptedModel(modelOptions);
  api = await startRecordingApi({ routes });
  httpTools = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  const outcome = await runAgentLoop(
    {
      model: { name: MODEL },
      messages: [{ role: 'user', content: 'look it up' }],
      tools: [searchTool(api.url)],
      maxSteps,
    },
    {
      model: new OpenAiChatClient({
        baseUrl: model.baseUrl,
        maxRetries: 1,
        backoff: { initialMs: 10, maxMs: 20 },
      }),
      executeTool: toolExecutor(
        {
          http: httpTools,
          dynamic: new DynamicToolRunner({ client: httpTools.client }),
          native: new NativeToolRegistry(),
        },
        { vault: { SEARCH_KEY }, account: { id: 'acme' } },
      ),
      emit: () => {},
      metrics,
    },
    new AbortController().signal,
  );
  metrics.ended(outcome.type === 'done' ? 'done' : outcome.data.code);
  return { outcome, reader };
}

const searchThenAnswer: ScriptedModelOptions = {
  script: [
    {
      toolCalls: [{ id: 'call_1', name: 'search', arguments: { q: ARGUMENT_TEXT } }],
      usage: { prompt_tokens: 21, completion_tokens: 8 },
    },
    { content: 'found it', usage: { prompt_tokens: 40, completion_tokens: 2 } },
  ],
};
const chat = { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': MODEL };
const histogram = (count: number, sum = expect.any(Number)) => ({ count, sum });

describe('executor metrics', () => {
  it('when a task calls one tool and is done, its model calls, tokens, tool call and outcome are counted', async () => {
    const { outcome, reader } = await meteredRun(searchThenAnswer, [
      { method: 'GET', path: '/search', reply: { body: { hits: 1 } } },
    ]);
    expect(outcome.type).toBe('done');

    expect(await reader.points(ExecutorMetric.MODEL_CALL_DURATION)).toEqual([
      { attributes: chat, value: histogram(2) },
    ]);
    expect(await reader.points(ExecutorMetric.TOKEN_USAGE)).toEqual([
      { attributes: { ...chat, 'gen_ai.token.type': 'input' }, value: histogram(2, 61) },
      { attributes: { ...chat, 'gen_ai.token.type': 'output' }, value: histogram(2, 10) },
    ]);
    const tool = { 'gen_ai.tool.name': 'search', outcome: 'ok' };
    expect(await reader.points(ExecutorMetric.TOOL_CALLS)).toEqual([{ attributes: tool, value: 1 }]);
    expect(await reader.points(ExecutorMetric.TOOL_DURATION)).toEqual([
      { attributes: tool, value: histogram(1) },
    ]);
    expect(await reader.points(ExecutorMetric.TASKS)).toEqual([
      { attributes: { outcome: 'done' }, value: 1 },
    ]);
    expect(await reader.points(ExecutorMetric.TASK_STEPS)).toEqual([
      { attributes: { outcome: 'done' }, value: histogram(1, 2) },
    ]);
    expect(await reader.points(ExecutorMetric.TASK_DURATION)).toEqual([
      { attributes: { outcome: 'done' }, value: histogram(1) },
    ]);
  });

  it('when the tool API fails, the tool call is counted with its error code and no argument or secret reaches any metric', async () => {
    const { outcome, reader } = await meteredRun(searchThenAnswer, [
      { method: 'GET', path: '/search', reply: { status: 500, body: { error: 'down' } } },
    ]);
    expect(outcome.type).toBe('done');

    const tool = { 'gen_ai.tool.name': 'search', outcome: 'tool_error' };
    expect(await reader.points(ExecutorMetric.TOOL_CALLS)).toEqual([{ attributes: tool, value: 1 }]);
    expect(await reader.points(ExecutorMetric.TOOL_DURATION)).toEqual([
      { attributes: tool, value: histogram(1) },
    ]);
    const everything = JSON.stringify(await reader.metrics());
    for (const secret of [SEARCH_KEY, ARGUMENT_TEXT]) expect(everything).not.toContain(secret);
    expect(everything).not.toContain('call_1');
  });

  it('when the model still asks for tools on its last allowed call, the task is counted as max_steps_exceeded after one step and no tool runs', async () => {
    const { outcome, reader } = await meteredRun(searchThenAnswer, [], 1);
    expect(outcome).toMatchObject({ type: 'error', data: { code: 'MAX_STEPS_EXCEEDED' } });

    const ended = { outcome: 'max_steps_exceeded' };
    expect(await reader.points(ExecutorMetric.TASKS)).toEqual([{ attributes: ended, value: 1 }]);
    expect(await reader.points(ExecutorMetric.TASK_STEPS)).toEqual([
      { attributes: ended, value: histogram(1, 1) },
    ]);
    expect(await reader.points(ExecutorMetric.TOOL_CALLS)).toEqual([]);
  });

  it('when the model stays unavailable, its calls are timed with the error code as error.type and no tokens are recorded', async () => {
    const { outcome, reader } = await meteredRun(
      { respond: () => ({ fault: 'server_error', status: 503 }) },
      [],
    );
    expect(outcome).toMatchObject({ type: 'error', data: { code: 'LLM_UNAVAILABLE' } });

    expect(await reader.points(ExecutorMetric.MODEL_CALL_DURATION)).toEqual([
      { attributes: { ...chat, 'error.type': 'LLM_UNAVAILABLE' }, value: histogram(1) },
    ]);
    expect(await reader.points(ExecutorMetric.TOKEN_USAGE)).toEqual([]);
    expect(await reader.points(ExecutorMetric.TASKS)).toEqual([
      { attributes: { outcome: 'llm_unavailable' }, value: 1 },
    ]);
  });
});
