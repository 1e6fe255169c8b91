import type { ChatMessage, EventData, NativeTool, ToolDefinition } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type RouteSpec,
  type ScriptedModel,
  type ScriptedModelOptions,
} from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { searchTool } from './__fixtures__/tasks.js';
import { runAgentLoop, type AgentTask, type LoopOutcome, type ProgressEvent } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { TaskAbort } from './task-abort.js';
import { TaskSpend, type TaskBudget } from './budget/task-spend.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { NativeToolRegistry } from './tools/native/index.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';

const SEARCH_KEY = 'canary-search-key-4f1c';

let model: ScriptedModel | undefined;
let api: RecordingApi | undefined;
let httpTools: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), api?.stop(), httpTools?.close()]);
  model = api = httpTools = undefined;
});

interface Harness {
  model: ScriptedModel;
  api: RecordingApi;
  /** Every event but `step_finished` and `tool_call_delta`. */
  events: ProgressEvent[];
  /** The `step_finished` events. */
  steps: EventData<'step_finished'>[];
  /** Every event, in order. */
  all: ProgressEvent[];
  run(options?: {
    tools?: ToolDefinition[];
    maxSteps?: number;
    abort?: TaskAbort;
    spend?: TaskSpend;
    budget?: TaskBudget;
  }): Promise<LoopOutcome>;
}

async function harness(modelOptions: ScriptedModelOptions, routes: RouteSpec[] = []): Promise<Harness> {
  model = await startScriptedModel(modelOptions);
  api = await startRecordingApi({ routes });
  httpTools = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] }, defaultTimeoutMs: 10_000 });
  const client = new OpenAiChatClient({
    baseUrl: model.baseUrl,
    timeoutMs: 10_000,
    maxRetries: 2,
    backoff: { initialMs: 10, maxMs: 50 },
  });
  const events: ProgressEvent[] = [];
  const steps: EventData<'step_finished'>[] = [];
  const all: ProgressEvent[] = [];
  const runner = httpTools;
  const origin = api.url;
  return {
    model,
    api,
    events,
    steps,
    all,
    run: ({ tools = [searchTool(origin)], maxSteps = 5, abort = new TaskAbort(), spend, budget } = {}) => {
      const task: AgentTask = {
        model: { name: 'scripted-model' },
        messages: [
          { role: 'system', content: 'You are a test agent.' },
          { role: 'user', content: 'find agentmesh' },
        ],
        tools,
        maxSteps,
        ...(spend === undefined ? {} : { spend }),
        ...(budget === undefined ? {} : { budget }),
      };
      return runAgentLoop(
        task,
        {
          model: client,
          executeTool: toolExecutor(
            {
              http: runner,
              dynamic: new DynamicToolRunner({ client: runner.client }),
              native: new NativeToolRegistry(),
            },
            { vault: { SEARCH_KEY }, account: { id: 'acme' } },
          ),
          emit: (event) => {
            all.push(event);
            if (event.type === 'step_finished') steps.push(event.data);
            else if (event.type !== 'tool_call_delta') events.push(event);
          },
          // Every call streams its arguments here, however short (the default holds back short ones).
          toolArgsStreamMinChars: 0,
        },
        abort.signal,
      );
    },
  };
}

const ok = (body: unknown): RouteSpec['reply'] => ({ status: 200, body });
const chunkText = (events: ProgressEvent[]) =>
  events.flatMap((event) => (event.type === 'message_chunk' ? [event.data.delta] : [])).join('');
const types = (events: ProgressEvent[]) => events.map((event) => event.type);
const messagesOf = (request: { body: unknown }) => (request.body as { messages: ChatMessage[] }).messages;
const toolMessages = (request: { body: unknown }) => messagesOf(request).filter((m) => m.role === 'tool');

describe('the agent loop', () => {
  it('when the model answers with text only, the text streams as message_chunks and the task is done', async () => {
    const h = await harness({
      script: [
        {
          content: 'Hello from the scripted model.',
          chunkSize: 5,
          usage: { prompt_tokens: 12, completion_tokens: 7 },
        },
      ],
    });
    const outcome = await h.run();
    expect(types(h.events).every((type) => type === 'message_chunk')).toBe(true);
    expect(h.events.length).toBeGreaterThan(1);
    expect(chunkText(h.events)).toBe('Hello from the scripted model.');
    expect(outcome).toEqual({
      type: 'done',
      data: {
        message: 'Hello from the scripted model.',
        steps: 1,
        usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
        duration_ms: expect.any(Number),
        finish_reason: 'stop',
      },
    });
  });

  it('when the model calls a tool, the API gets the call with its credential, the model gets the result, and its answer ends the task', async () => {
    const h = await harness(
      {
        script: [
          {
            toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'agentmesh' } }],
            usage: { prompt_tokens: 10, completion_tokens: 5 },
          },
          { content: 'Found 3 hits.', usage: { prompt_tokens: 30, completion_tokens: 4 } },
        ],
      },
      [{ method: 'GET', path: '/search', reply: ok({ hits: 3 }) }],
    );
    const outcome = await h.run();

    expect(h.api.requests).toHaveLength(1);
    expect(h.api.requests[0]!.query).toEqual({ q: 'agentmesh' });
    expect(h.api.requests[0]!.headers['x-api-key']).toBe(SEARCH_KEY);
    expect(types(h.events).slice(0, 2)).toEqual(['tool_start', 'tool_result']);
    expect(h.events[0]!.data).toEqual({ call_id: 'call_a', tool: 'search', arguments: { q: 'agentmesh' } });
    expect(h.events[1]!.data).toMatchObject({
      call_id: 'call_a',
      tool: 'search',
      ok: true,
      result: { hits: 3 },
    });
    expect(chunkText(h.events)).toBe('Found 3 hits.');

    // The model is shown what a tool does, never how it runs or authenticates.
    const shownTools = (h.model.requests[0]!.body as { tools: unknown[] }).tools;
    expect(shownTools).toEqual([
      {
        type: 'function',
        function: {
          name: 'search',
          description: 'searches search',
          parameters: searchTool(h.api.url).parameters,
        },
      },
    ]);
    const second = messagesOf(h.model.requests[1]!);
    expect(second.at(-2)).toMatchObject({
      role: 'assistant',
      tool_calls: [{ id: 'call_a', function: { name: 'search' } }],
    });
    expect(second.at(-1)).toEqual({ role: 'tool', tool_call_id: 'call_a', content: '{"hits":3}' });
    expect(outcome).toMatchObject({
      type: 'done',
      data: {
        message: 'Found 3 hits.',
        steps: 2,
        usage: { prompt_tokens: 40, completion_tokens: 9, total_tokens: 49 },
      },
    });
  });

  it('when the model streams two tool calls, tool_call_delta events name each call and add up to its arguments, before the tool_starts', async () => {
    const h = await harness({
      script: [
        {
          toolCalls: [
            { id: 'call_one', name: 'search', arguments: { q: 'agentmesh streaming' } },
            { id: 'call_two', name: 'search', arguments: { q: 'tool call deltas' } },
          ],
          chunkSize: 3,
        },
        { content: 'Found.' },
      ],
    });
    await h.run();
    const deltasOf = (callId: string) =>
      h.all.flatMap((event) =>
        event.type === 'tool_call_delta' && event.data.call_id === callId ? [event.data] : [],
      );
    for (const [callId, q] of [
      ['call_one', 'agentmesh streaming'],
      ['call_two', 'tool call deltas'],
    ] as const) {
      const deltas = deltasOf(callId);
      expect(deltas.length).toBeGreaterThan(3);
      expect(deltas.every((data) => data.tool === 'search')).toBe(true);
      expect(deltas.map((data) => data.delta).join('')).toBe(JSON.stringify({ q }));
    }
    const firstStart = h.all.findIndex((event) => event.type === 'tool_start');
    expect(h.all.findLastIndex((event) => event.type === 'tool_call_delta')).toBeLessThan(firstStart);
  });

  it('when the model calls two tools at once, both requests are in flight together and the answers come back in call order', async () => {
    // The routes read the harness's events, and the harness exists only once its servers run.
    const started: { harness?: Harness } = {};
    // Each route answers only once both requests have arrived: run one after the other, neither would.
    const bothArrived = () =>
      waitFor(() => api!.requests.length >= 2, { timeoutMs: 3_000, description: 'both tool requests' }).then(
        () => true,
        () => false,
      );
    const h = await harness(
      {
        script: [
          {
            toolCalls: [
              { id: 'call_first', name: 'alpha', arguments: { q: 'one' } },
              { id: 'call_second', name: 'beta', arguments: { q: 'two' } },
            ],
          },
          { content: 'Both done.' },
        ],
      },
      [
        {
          method: 'GET',
          path: '/alpha',
          // The first call finishes last, so completion order and call order differ.
          reply: async () => {
            const together = await bothArrived();
            await waitFor(
              () =>
                started.harness?.events.some(
                  (e) => e.type === 'tool_result' && e.data.call_id === 'call_second',
                ),
              {
                timeoutMs: 3_000,
              },
            );
            return { body: { tool: 'alpha', together } };
          },
        },
        {
          method: 'GET',
          path: '/beta',
          reply: async () => ({ body: { tool: 'beta', together: await bothArrived() } }),
        },
      ],
    );
    started.harness = h;
    const outcome = await h.run({ tools: [searchTool(h.api.url, 'alpha'), searchTool(h.api.url, 'beta')] });

    expect(outcome.type).toBe('done');
    const results = h.events.filter((e) => e.type === 'tool_result');
    expect(results.map((e) => e.data.call_id)).toEqual(['call_second', 'call_first']);
    expect(results.map((e) => (e.data.ok ? e.data.result : undefined))).toEqual([
      { tool: 'beta', together: true },
      { tool: 'alpha', together: true },
    ]);
    expect(toolMessages(h.model.requests[1]!)).toEqual([
      { role: 'tool', tool_call_id: 'call_first', content: '{"tool":"alpha","together":true}' },
      { role: 'tool', tool_call_id: 'call_second', content: '{"tool":"beta","together":true}' },
    ]);
    expect(types(h.events).slice(0, 2)).toEqual(['tool_start', 'tool_start']);
  });

  it('when the model asks for an unknown tool, the model gets a NOT_FOUND tool error and the task goes on', async () => {
    const h = await harness({
      script: [
        { toolCalls: [{ id: 'call_x', name: 'teleport', arguments: { to: 'mars' } }] },
        { content: 'Sorry.' },
      ],
    });
    const outcome = await h.run();

    expect(h.events[1]).toEqual({
      type: 'tool_result',
      data: expect.objectContaining({
        call_id: 'call_x',
        tool: 'teleport',
        ok: false,
        error: expect.objectContaining({ code: 'NOT_FOUND' }),
      }),
    });
    const [answer] = toolMessages(h.model.requests[1]!);
    expect(JSON.parse(answer!.content as string)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    expect(answer!.content as string).toContain('search');
    expect(h.api.requests).toHaveLength(0);
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'Sorry.', steps: 2 } });
  });

  it('when the model sends arguments that are not JSON or break the schema, it gets INVALID_REQUEST tool errors and nothing is called', async () => {
    const h = await harness({
      script: [
        {
          toolCalls: [
            { id: 'call_json', name: 'search', arguments: '{"q": "unterminated' },
            { id: 'call_schema', name: 'search', arguments: { query: 'wrong field' } },
          ],
        },
        { content: 'Let me fix that.' },
      ],
    });
    const outcome = await h.run();

    const starts = h.events.filter((e) => e.type === 'tool_start');
    expect(starts.map((e) => e.data.arguments)).toEqual(['{"q": "unterminated', { query: 'wrong field' }]);
    const errors = toolMessages(h.model.requests[1]!).map(
      (m) => JSON.parse(m.content as string) as { error: { code: string; message: string } },
    );
    expect(errors.map((e) => e.error.code)).toEqual(['INVALID_REQUEST', 'INVALID_REQUEST']);
    expect(errors[0]!.error.message).toContain('not valid JSON');
    expect(errors[1]!.error.message).toMatch(/q: is required/);
    expect(h.api.requests).toHaveLength(0);
    expect(outcome.type).toBe('done');
  });

  it('when the tool API answers 500, tool_result is ok:false and the model sees the status and body in its next request', async () => {
    const h = await harness(
      {
        script: [
          { toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'x' } }] },
          { content: 'The API failed.' },
        ],
      },
      [{ method: 'GET', path: '/search', reply: { status: 500, body: { error: 'database on fire' } } }],
    );
    const outcome = await h.run();

    const result = h.events.find((e) => e.type === 'tool_result');
    expect(result?.data).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    const [answer] = toolMessages(h.model.requests[1]!);
    expect(answer!.content).toContain('500');
    expect(answer!.content).toContain('database on fire');
    expect(outcome.type).toBe('done');
  });

  it('when the model keeps calling tools, the task ends with MAX_STEPS_EXCEEDED after max_steps model calls', async () => {
    const h = await harness(
      { respond: () => ({ toolCalls: [{ name: 'search', arguments: { q: 'again' } }] }) },
      [{ method: 'GET', path: '/search', reply: ok({ hits: 0 }) }],
    );
    const outcome = await h.run({ maxSteps: 3 });

    expect(outcome).toMatchObject({ type: 'error', data: { code: 'MAX_STEPS_EXCEEDED', retryable: false } });
    expect(h.model.requests).toHaveLength(3);
    // The last step's calls are not run: no model call is left to read their results.
    expect(h.api.requests).toHaveLength(2);
  });

  it('when the task is cancelled while the model streams, the call is aborted and the task ends CANCELLED at once', async () => {
    const h = await harness({ script: [{ content: 'word '.repeat(200), chunkSize: 5, chunkDelayMs: 50 }] });
    const abort = new TaskAbort();
    const running = h.run({ abort });
    await waitFor(() => h.events.length >= 2, { description: 'the first chunks' });
    abort.cancel('user pressed stop');
    const chunksAtCancel = h.events.length;
    const outcome = await running;

    expect(outcome).toEqual({
      type: 'error',
      data: { code: 'CANCELLED', message: 'the task was cancelled: user pressed stop', retryable: false },
    });
    // 200 chunks at 50 ms would take 10 s; the loop stopped long before, and emitted nothing after.
    expect(h.events.length).toBe(chunksAtCancel);
    expect(chunkText(h.events).length).toBeLessThan('word '.repeat(200).length);
  });

  it('when a tool call is in flight at cancel, it is aborted too and reported as cancelled', async () => {
    const h = await harness(
      { script: [{ toolCalls: [{ id: 'call_slow', name: 'search', arguments: { q: 'slow' } }] }] },
      [{ method: 'GET', path: '/search', delayMs: 30_000, reply: ok({ never: true }) }],
    );
    const abort = new TaskAbort();
    const running = h.run({ abort });
    await h.api.waitForRequests(1);
    abort.cancel();
    const outcome = await running;

    expect(outcome).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(h.events.at(-1)).toMatchObject({
      type: 'tool_result',
      data: { call_id: 'call_slow', ok: false, error: { code: 'CANCELLED' } },
    });
    expect(h.model.requests).toHaveLength(1);
  });

  it('when the deadline passes while the model hangs, the task ends DEADLINE_EXCEEDED', async () => {
    const h = await harness({ script: [{ fault: 'hang' }] });
    const outcome = await h.run({ abort: new TaskAbort(Date.now() + 300) });

    expect(outcome).toMatchObject({ type: 'error', data: { code: 'DEADLINE_EXCEEDED', retryable: false } });
    expect(h.model.requests).toHaveLength(1);
  });

  it('when the model reasons before answering, the reasoning streams as tool_thinking before the answer', async () => {
    const h = await harness({ script: [{ reasoning: 'The user wants a greeting.', content: 'Hi!' }] });
    const outcome = await h.run();

    const thinking = h.events
      .filter((e) => e.type === 'tool_thinking')
      .map((e) => e.data.delta)
      .join('');
    expect(thinking).toBe('The user wants a greeting.');
    const firstChunk = types(h.events).indexOf('message_chunk');
    expect(types(h.events).lastIndexOf('tool_thinking')).toBeLessThan(firstChunk);
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'Hi!' } });
  });

  it('when the model first answers 429 with Retry-After, the call is retried and the task is done', async () => {
    const h = await harness({
      script: [{ fault: 'rate_limit', retryAfterSeconds: 1 }, { content: 'After the wait.' }],
    });
    const outcome = await h.run();

    expect(h.model.requests.map((r) => r.outcome)).toEqual(['rate_limit', 'reply']);
    expect(chunkText(h.events)).toBe('After the wait.');
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'After the wait.', steps: 1 } });
  });

  it('when the model stays unavailable, the task ends with LLM_UNAVAILABLE, marked retryable', async () => {
    const h = await harness({ respond: () => ({ fault: 'server_error', status: 503 }) });
    const outcome = await h.run();

    expect(outcome).toMatchObject({ type: 'error', data: { code: 'LLM_UNAVAILABLE', retryable: true } });
    expect(h.model.requests).toHaveLength(3);
  });

  it('when the model calls a native tool no executor provides, the model gets a NOT_FOUND "unavailable" tool error and the task goes on', async () => {
    const native: NativeTool = {
      type: 'NATIVE',
      name: 'clock',
      description: 'tells the time',
      parameters: { type: 'object', properties: {} },
      class_name: 'ClockTool',
    };
    const h = await harness({
      script: [{ toolCalls: [{ id: 'call_c', name: 'clock', arguments: {} }] }, { content: 'No clock.' }],
    });
    const outcome = await h.run({ tools: [native] });

    const [answer] = toolMessages(h.model.requests[1]!);
    expect(JSON.parse(answer!.content as string)).toEqual({
      error: {
        code: 'NOT_FOUND',
        message: 'native tool clock is unavailable (no running executor provides it); answer without it',
        detail: { class_name: 'ClockTool' },
      },
    });
    expect(h.events[1]).toMatchObject({
      type: 'tool_result',
      data: { ok: false, error: { code: 'NOT_FOUND' } },
    });
    expect(outcome.type).toBe('done');
  });
});

describe('the agent loop, counting and budgeting model calls', () => {
  const price = { input_per_million_usd: 1, output_per_million_usd: 2 };
  const twoSteps = {
    script: [
      {
        toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'agentmesh' } }],
        usage: { prompt_tokens: 10, completion_tokens: 5 },
      },
      { content: 'Found 3 hits.', usage: { prompt_tokens: 30, completion_tokens: 4 } },
    ],
  };
  const searchRoute: RouteSpec[] = [{ method: 'GET', path: '/search', reply: ok({ hits: 3 }) }];

  it("when a priced task resumes, each model call's step_finished has its usage and cost and the totals of every attempt, and done reports them", async () => {
    const h = await harness(twoSteps, searchRoute);
    const earlier = {
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
      costUsd: 0.0002,
    };
    const outcome = await h.run({ spend: new TaskSpend(price, earlier) });

    expect(h.steps).toEqual([
      {
        step: 1,
        finish_reason: 'tool_calls',
        usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
        cost_usd: 0.00002,
        total_usage: { prompt_tokens: 110, completion_tokens: 55, total_tokens: 165 },
        total_cost_usd: 0.00022,
      },
      {
        step: 2,
        finish_reason: 'stop',
        usage: { prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 },
        cost_usd: 0.000038,
        total_usage: { prompt_tokens: 140, completion_tokens: 59, total_tokens: 199 },
        total_cost_usd: 0.000258,
      },
    ]);
    expect(outcome).toEqual({
      type: 'done',
      data: {
        message: 'Found 3 hits.',
        steps: 2,
        usage: { prompt_tokens: 140, completion_tokens: 59, total_tokens: 199 },
        cost_usd: 0.000258,
        duration_ms: expect.any(Number),
        finish_reason: 'stop',
      },
    });
  });

  it('when the model has no price, step_finished and done carry tokens but no cost, and a cost budget does not stop the task', async () => {
    const h = await harness(twoSteps, searchRoute);
    const outcome = await h.run({ budget: { max_cost_usd: 0.000001 } });

    expect(h.steps.map((step) => Object.keys(step).sort())).toEqual([
      ['finish_reason', 'step', 'total_usage', 'usage'],
      ['finish_reason', 'step', 'total_usage', 'usage'],
    ]);
    expect(outcome.type).toBe('done');
    expect(outcome.data).not.toHaveProperty('cost_usd');
  });

  it('when step 1 uses up the token budget, its tool still runs, the model is not asked again and the task ends BUDGET_EXCEEDED', async () => {
    const h = await harness(
      {
        script: [
          {
            toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'agentmesh' } }],
            usage: { prompt_tokens: 60, completion_tokens: 40 },
          },
          {
            toolCalls: [{ id: 'call_b', name: 'search', arguments: { q: 'again' } }],
            usage: { prompt_tokens: 60, completion_tokens: 40 },
          },
          { content: 'never asked', usage: { prompt_tokens: 1, completion_tokens: 1 } },
        ],
      },
      searchRoute,
    );
    const outcome = await h.run({ budget: { max_total_tokens: 100 } });

    expect(h.api.requests).toHaveLength(1);
    expect(h.model.requests).toHaveLength(1);
    expect(types(h.events)).toEqual(['tool_start', 'tool_result']);
    expect(h.steps).toHaveLength(1);
    expect(outcome).toEqual({
      type: 'error',
      data: {
        code: 'BUDGET_EXCEEDED',
        message:
          'the task used 100 tokens of its budget of 100 (max_total_tokens); the model was not asked again',
        retryable: false,
        detail: { used_tokens: 100, max_total_tokens: 100 },
      },
    });
  });

  it('when step 1 spends the cost budget of a priced task, the model is not asked again and the task ends BUDGET_EXCEEDED', async () => {
    const h = await harness(twoSteps, searchRoute);
    // Step 1 costs $0.00002.
    const outcome = await h.run({ spend: new TaskSpend(price), budget: { max_cost_usd: 0.00001 } });

    expect(h.api.requests).toHaveLength(1);
    expect(h.model.requests).toHaveLength(1);
    expect(outcome.type).toBe('error');
    expect(outcome.data).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      retryable: false,
      detail: { used_cost_usd: 0.00002, max_cost_usd: 0.00001 },
    });
  });

  it('when the task stays within its budgets, it runs to done', async () => {
    const h = await harness(twoSteps, searchRoute);
    const outcome = await h.run({
      spend: new TaskSpend(price),
      budget: { max_total_tokens: 16, max_cost_usd: 1 },
    });
    expect(h.model.requests).toHaveLength(2);
    expect(outcome.type).toBe('done');
  });
});
