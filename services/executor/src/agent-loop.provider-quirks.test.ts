// The loop with the real client against a real loopback model replaying provider quirks: Mistral's
// content part arrays, DeepSeek's reasoning rules for tool calls (the server emulates each rule's 400),
// turns cut at the token limit or filtered, and a provider that sends no usage.
import type { ChatMessage, EventData } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  type ChatCompletionRequest,
  type ModelStep,
  type RecordingApi,
  type ScriptedModel,
  type ScriptedModelOptions,
} from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { searchTool } from './__fixtures__/tasks.js';
import {
  MISTRAL_ANSWER,
  MISTRAL_THINKING,
  mistralReasoningStream,
  streamWithoutUsage,
} from './__fixtures__/provider-streams.js';
import { runAgentLoop, type LoopOutcome, type ProgressEvent } from './agent-loop.js';
import { OpenAiChatClient, profileOf } from './llm/index.js';
import { TaskAbort } from './task-abort.js';
import type { TaskBudget } from './budget/task-spend.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { NativeToolRegistry } from './tools/native/index.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';

let model: ScriptedModel | undefined;
let api: RecordingApi | undefined;
let httpTools: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), api?.stop(), httpTools?.close()]);
  model = api = httpTools = undefined;
});

interface Run {
  outcome: LoopOutcome;
  events: ProgressEvent[];
  steps: EventData<'step_finished'>[];
  model: ScriptedModel;
  api: RecordingApi;
}

async function run(
  provider: string,
  modelOptions: ScriptedModelOptions,
  { budget, maxSteps = 5 }: { budget?: TaskBudget; maxSteps?: number } = {},
): Promise<Run> {
  model = await startScriptedModel(modelOptions);
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/search', reply: { status: 200, body: { hits: 3 } } }],
  });
  httpTools = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] }, defaultTimeoutMs: 10_000 });
  const profile = profileOf(provider);
  if (profile === undefined) throw new Error(`no profile ${provider}`);
  const client = new OpenAiChatClient({ baseUrl: model.baseUrl, profile, maxRetries: 0, timeoutMs: 10_000 });
  const events: ProgressEvent[] = [];
  const steps: EventData<'step_finished'>[] = [];
  const outcome = await runAgentLoop(
    {
      model: { name: 'm' },
      messages: [
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content: 'find agentmesh' },
      ],
      tools: [searchTool(api.url)],
      maxSteps,
      ...(budget === undefined ? {} : { budget }),
    },
    {
      model: client,
      executeTool: toolExecutor(
        {
          http: httpTools,
          dynamic: new DynamicToolRunner({ client: httpTools.client }),
          native: new NativeToolRegistry(),
        },
        { vault: { SEARCH_KEY: 'k' }, account: { id: 'acme' } },
      ),
      emit: (event) => {
        if (event.type === 'step_finished') steps.push(event.data);
        else events.push(event);
      },
    },
    new TaskAbort().signal,
  );
  return { outcome, events, steps, model, api };
}

const textOf = (events: ProgressEvent[], type: 'message_chunk' | 'tool_thinking') =>
  events.flatMap((event) => (event.type === type ? [event.data.delta] : [])).join('');
const messagesOf = (request: { body: unknown }) => (request.body as { messages: ChatMessage[] }).messages;

/** DeepSeek's documented 400 for its thinking mode with tools (V3.1+/V4): every tool-call turn must carry its reasoning. */
function deepSeekThinkingRule(request: ChatCompletionRequest): ModelStep | undefined {
  const missing = messagesOf(request).some(
    (m) =>
      m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0 && typeof m.reasoning_content !== 'string',
  );
  return missing
    ? {
        fault: 'server_error',
        status: 400,
        message: 'The reasoning_content in the thinking mode must be passed back to the API.',
      }
    : undefined;
}

/** deepseek-reasoner's (R1) documented 400: reasoning_content in input messages. */
function deepSeekR1Rule(request: ChatCompletionRequest): ModelStep | undefined {
  const sent = messagesOf(request).some((m) => m.role === 'assistant' && 'reasoning_content' in m);
  return sent
    ? { fault: 'server_error', status: 400, message: 'reasoning_content is not allowed in input messages' }
    : undefined;
}

const searchCall = { name: 'search', arguments: { q: 'agentmesh' } };

describe('the agent loop with provider quirks', () => {
  it('when Mistral reasoning streams content as part arrays, the task is done with the text as its answer and the thinking as tool_thinking', async () => {
    const r = await run('mistral', { script: [mistralReasoningStream()] });
    expect(r.outcome).toMatchObject({
      type: 'done',
      data: { message: MISTRAL_ANSWER, finish_reason: 'stop' },
    });
    expect(textOf(r.events, 'tool_thinking')).toBe(MISTRAL_THINKING);
    expect(textOf(r.events, 'message_chunk')).toBe(MISTRAL_ANSWER);
  });

  it('when DeepSeek thinks and calls a tool, the follow-up request passes the reasoning back and the task is done', async () => {
    const r = await run('deepseek', {
      script: [{ reasoning: 'I need the docs.', toolCalls: [searchCall] }],
      respond: (request) => deepSeekThinkingRule(request) ?? { content: 'Found 3 hits.' },
    });
    expect(r.outcome).toMatchObject({ type: 'done', data: { message: 'Found 3 hits.' } });
    const followUp = messagesOf(r.model.requests[1]!).find((m) => m.role === 'assistant');
    expect(followUp).toMatchObject({
      reasoning_content: 'I need the docs.',
      tool_calls: [{ function: { name: 'search' } }],
    });
  });

  it('when deepseek-reasoner (R1) thinks and calls a tool, the follow-up request carries no reasoning and the task is done', async () => {
    const r = await run('deepseek-r1', {
      script: [{ reasoning: 'I need the docs.', toolCalls: [searchCall] }],
      respond: (request) => deepSeekR1Rule(request) ?? { content: 'Found 3 hits.' },
    });
    expect(r.outcome).toMatchObject({ type: 'done', data: { message: 'Found 3 hits.' } });
  });

  it('when the final answer is cut at the token limit, step_finished and done say length and done says truncated', async () => {
    const r = await run('generic', {
      script: [{ content: 'The answer is long and', finishReason: 'length' }],
    });
    expect(r.steps.map((step) => step.finish_reason)).toEqual(['length']);
    expect(r.outcome).toMatchObject({
      type: 'done',
      data: { message: 'The answer is long and', finish_reason: 'length', truncated: true },
    });
  });

  it('when the final answer is withheld by the content filter, done says content_filter and truncated', async () => {
    const r = await run('generic', { script: [{ content: '', finishReason: 'content_filter' }] });
    expect(r.outcome).toMatchObject({
      type: 'done',
      data: { finish_reason: 'content_filter', truncated: true },
    });
  });

  it('when a complete answer ends, done is not marked truncated', async () => {
    const r = await run('generic', { script: [{ content: 'All of it.' }] });
    expect(r.outcome.type).toBe('done');
    expect(r.outcome.data).not.toHaveProperty('truncated');
  });

  it('when a turn with a tool call is cut at the token limit, the call is not run, the model is told to retry shorter, and its next turn goes on', async () => {
    const r = await run('generic', {
      script: [
        { toolCalls: [{ name: 'search', arguments: '{"q":"agentm' }], finishReason: 'length' },
        { toolCalls: [searchCall] },
        { content: 'Found 3 hits.' },
      ],
    });
    expect(r.outcome).toMatchObject({ type: 'done', data: { message: 'Found 3 hits.', steps: 3 } });
    // Only the second, complete call reached the API.
    expect(r.api.requests).toHaveLength(1);
    const results = r.events.filter((event) => event.type === 'tool_result');
    expect(results[0]).toMatchObject({ data: { ok: false, error: { code: 'INVALID_REQUEST' } } });
    expect(results[1]).toMatchObject({ data: { ok: true } });
    const told = messagesOf(r.model.requests[1]!).find((m) => m.role === 'tool');
    expect(String(told?.content)).toContain('cut off at the output token limit');
    expect(r.steps.map((step) => step.finish_reason)).toEqual(['length', 'tool_calls', 'stop']);
  });

  it('when the provider sends no usage, step_finished and done say it was not reported and count an estimate, not zero', async () => {
    const r = await run('generic', { script: [streamWithoutUsage('Done without usage.')] });
    const [step] = r.steps;
    expect(step).toMatchObject({ usage_reported: false, finish_reason: 'stop' });
    expect(step?.usage.total_tokens).toBeGreaterThan(0);
    expect(r.outcome).toMatchObject({ type: 'done', data: { usage_reported: false, usage: step?.usage } });
  });

  it('when the provider sends no usage, the token budget still stops the task (the estimate counts)', async () => {
    const r = await run(
      'generic',
      {
        script: [{ raw: streamWithoutUsageToolCall() }, { content: 'never asked' }],
      },
      { budget: { max_total_tokens: 10 } },
    );
    expect(r.outcome).toMatchObject({ type: 'error', data: { code: 'BUDGET_EXCEEDED' } });
    expect(r.model.requests).toHaveLength(1);
    expect(r.model.pendingSteps()).toBe(1);
  });
});

/** A tool-call turn with no usage, as raw SSE. */
function streamWithoutUsageToolCall() {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: 'c',
    object: 'chat.completion.chunk',
    model: 'claude-via-proxy',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const call = {
    index: 0,
    id: 'call_1',
    type: 'function',
    function: { name: 'search', arguments: '{"q":"x"}' },
  };
  return {
    body: [
      `data: ${JSON.stringify(chunk({ role: 'assistant', tool_calls: [call] }))}\n\n`,
      `data: ${JSON.stringify(chunk({}, 'tool_calls'))}\n\n`,
      'data: [DONE]\n\n',
    ],
  };
}
