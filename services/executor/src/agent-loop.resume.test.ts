// The agent loop resumed from a redelivered task's log (resume/resume-point.ts), and its write-ahead: tools
// run only after their tool_start is stored. Real scripted model, real recording APIs, no NATS.
import type { ChatMessage, EventType, TaskEvent, ToolDefinition } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
  type ScriptedModelOptions,
} from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { searchTool } from './__fixtures__/tasks.js';
import { appendixDynamicTool, recallAnswer } from './__fixtures__/recall-answers.js';
import {
  runAgentLoop,
  type AgentLoopDependencies,
  type LoopOutcome,
  type ProgressEvent,
  type ToolExecutor,
} from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { resumePointOf, type ResumePoint } from './resume/resume-point.js';
import { defineNativeTool, NativeToolRegistry } from './tools/native/index.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { DynamicToolRunner, HttpToolRunner, toolSuccess } from './tools/index.js';

const PROXY_PATH = '/tool-box/box-1/proxy/tool-1';

let model: ScriptedModel | undefined;
let api: RecordingApi | undefined;
let http: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), api?.stop(), http?.close()]);
  model = api = http = undefined;
});

/** A stand-in for recall that answers every call with the same dynamic tool, and counts its calls. */
function lookupTool(answer: () => unknown) {
  const calls: string[] = [];
  const tool = defineNativeTool({
    name: 'lookup_actions',
    description: 'finds actions',
    className: 'LookupActionsTool',
    input: z.object({ object_id: z.string() }),
    run: async (_args, ctx) => {
      calls.push(ctx.callId);
      return toolSuccess(answer());
    },
  });
  return { tool, calls };
}

interface Run {
  outcome: LoopOutcome;
  events: ProgressEvent[];
}

async function start(modelOptions: ScriptedModelOptions): Promise<void> {
  model = await startScriptedModel(modelOptions);
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: (request) => ({ body: { hits: [request.query['q']] } }) },
      { method: 'POST', path: PROXY_PATH, reply: { body: { rows: 1 } } },
    ],
  });
  http = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
}

async function run(
  tools: ToolDefinition[],
  options: {
    resume?: ResumePoint;
    native?: NativeToolRegistry;
    emitDurably?: AgentLoopDependencies['emitDurably'];
    wrap?: (execute: ToolExecutor) => ToolExecutor;
    dynamicToolSources?: string[];
  } = {},
): Promise<Run> {
  const events: ProgressEvent[] = [];
  const execute = toolExecutor(
    {
      http: http!,
      dynamic: new DynamicToolRunner({ client: http!.client }),
      native: options.native ?? new NativeToolRegistry(),
    },
    { vault: { SEARCH_KEY: 'k' }, account: { id: 'acme' } },
  );
  const outcome = await runAgentLoop(
    {
      model: { name: 'scripted-model' },
      messages: [{ role: 'user', content: 'find things' }],
      tools,
      maxSteps: 5,
      ...(options.resume === undefined ? {} : { resume: options.resume }),
      ...(options.dynamicToolSources === undefined ? {} : { dynamicToolSources: options.dynamicToolSources }),
    },
    {
      model: new OpenAiChatClient({ baseUrl: model!.baseUrl, timeoutMs: 10_000 }),
      executeTool: options.wrap?.(execute) ?? execute,
      // What the model calls used is not what this test is about (agent-loop.test.ts, budget).
      emit: (event) => {
        if (event.type !== 'step_finished') events.push(event);
      },
      ...(options.emitDurably === undefined ? {} : { emitDurably: options.emitDurably }),
    },
    new AbortController().signal,
  );
  return { outcome, events };
}

/** A log as an earlier attempt would have written it. */
function log(...entries: Array<[EventType, unknown]>): TaskEvent[] {
  return entries.map(
    ([type, data], index) =>
      ({ trace_id: 'a'.repeat(32), seq: index + 1, ts: '', attempt: 1, type, data }) as TaskEvent,
  );
}

const messagesOf = (request: { body: unknown }) => (request.body as { messages: ChatMessage[] }).messages;

describe('resuming the agent loop', () => {
  it('answered turns are not asked again, a resolved call does not run, and a pending call runs once with its call_id', async () => {
    await start({ script: [{ content: 'Both found.' }] });
    const resume = resumePointOf(
      log(
        ['message_chunk', { delta: 'Searching.' }],
        ['tool_start', { call_id: 'call_a', tool: 'search', arguments: { q: 'first' } }],
        ['tool_start', { call_id: 'call_b', tool: 'search', arguments: { q: 'second' } }],
        [
          'tool_result',
          { call_id: 'call_a', tool: 'search', ok: true, result: { hits: ['first'] }, duration_ms: 1 },
        ],
      ),
    );

    const { outcome, events } = await run([searchTool(api!.url)], { resume });

    expect(api!.requests.map((request) => request.query['q'])).toEqual(['second']);
    expect(events.filter((event) => event.type !== 'message_chunk')).toEqual([
      { type: 'tool_start', data: { call_id: 'call_b', tool: 'search', arguments: { q: 'second' } } },
      expect.objectContaining({
        type: 'tool_result',
        data: expect.objectContaining({ call_id: 'call_b', ok: true }),
      }),
    ]);
    expect(model!.requests).toHaveLength(1);
    expect(messagesOf(model!.requests[0]!)).toEqual([
      { role: 'user', content: 'find things' },
      {
        role: 'assistant',
        content: 'Searching.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'search', arguments: '{"q":"first"}' } },
          { id: 'call_b', type: 'function', function: { name: 'search', arguments: '{"q":"second"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"hits":["first"]}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"hits":["second"]}' },
    ]);
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'Both found.', steps: 2 } });
  });

  it('a resumed task keeps counting its steps toward max_steps', async () => {
    await start({ script: [{ toolCalls: [{ id: 'call_9', name: 'search', arguments: { q: 'more' } }] }] });
    const turns = Array.from({ length: 4 }, (_, i): Array<[EventType, unknown]> => [
      ['tool_start', { call_id: `c${i}`, tool: 'search', arguments: { q: `${i}` } }],
      ['tool_result', { call_id: `c${i}`, tool: 'search', ok: true, result: i, duration_ms: 1 }],
    ]).flat();

    const { outcome } = await run([searchTool(api!.url)], { resume: resumePointOf(log(...turns)) });

    expect(outcome).toMatchObject({ type: 'error', data: { code: 'MAX_STEPS_EXCEEDED' } });
    expect(model!.requests).toHaveLength(1);
    expect(api!.requests).toEqual([]);
  });

  it('tools a resolved recall call added are callable again: the source is looked up again without events, its answer kept', async () => {
    await start({
      script: [
        {
          toolCalls: [
            {
              id: 'call_2',
              name: 'query_object_instances',
              arguments: { kn_id: 'kn', ot_id: 'disease', limit: 1 },
            },
          ],
        },
        { content: 'One row.' },
      ],
    });
    const proxyUrl = `${api!.url}${PROXY_PATH}`;
    const lookup = lookupTool(() => recallAnswer(appendixDynamicTool(proxyUrl)));
    const shown = { _dynamic_tools: [{ name: 'query_object_instances', description: 'd', parameters: {} }] };
    const resume = resumePointOf(
      log(
        ['tool_start', { call_id: 'call_1', tool: 'lookup_actions', arguments: { object_id: 'd1' } }],
        [
          'tool_result',
          { call_id: 'call_1', tool: 'lookup_actions', ok: true, result: shown, duration_ms: 1 },
        ],
      ),
    );

    const { outcome, events } = await run([lookup.tool.definition], {
      resume,
      native: new NativeToolRegistry([lookup.tool]),
      dynamicToolSources: ['lookup_actions'],
    });

    expect(lookup.calls).toEqual(['call_1']);
    expect(events.filter((event) => event.type === 'tool_start').map((event) => event.data.call_id)).toEqual([
      'call_2',
    ]);
    expect(api!.requests.filter((request) => request.path === PROXY_PATH)).toHaveLength(1);
    expect(messagesOf(model!.requests[0]!).find((m) => m.role === 'tool')).toEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content: JSON.stringify(shown),
    });
    expect(outcome).toMatchObject({ type: 'done', data: { message: 'One row.', steps: 3 } });
  });
});

describe('write-ahead', () => {
  it("a tool runs only after the step's last tool_start is stored", async () => {
    await start({
      script: [
        {
          toolCalls: [
            { id: 'call_a', name: 'search', arguments: { q: 'a' } },
            { id: 'call_b', name: 'search', arguments: { q: 'b' } },
          ],
        },
        { content: 'done' },
      ],
    });
    let stored = false;
    const startedBeforeStored: boolean[] = [];

    const { outcome } = await run([searchTool(api!.url)], {
      emitDurably: async () => {
        await Promise.resolve();
        stored = true;
      },
      wrap: (execute) => (tool, args, ctx) => {
        startedBeforeStored.push(!stored);
        return execute(tool, args, ctx);
      },
    });

    expect(outcome).toMatchObject({ type: 'done' });
    expect(startedBeforeStored).toEqual([false, false]);
  });

  it('when the tool_start cannot be stored, the tool is not called', async () => {
    await start({ script: [{ toolCalls: [{ id: 'call_a', name: 'search', arguments: { q: 'pay' } }] }] });

    const { outcome, events } = await run([searchTool(api!.url)], {
      emitDurably: () => Promise.reject(new Error('stream lost')),
    });

    expect(api!.requests).toEqual([]);
    expect(events.some((event) => event.type === 'tool_result')).toBe(false);
    expect(outcome).toMatchObject({ type: 'error', data: { code: 'INTERNAL' } });
  });
});
