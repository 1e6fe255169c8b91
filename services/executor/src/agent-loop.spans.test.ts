import { startTelemetry, type Telemetry } from '@agentmesh/runtime';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { searchTool } from './__fixtures__/tasks.js';
import { runAgentLoop } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { toolExecutor } from './tools/tool-dispatch.js';
import { NativeToolRegistry } from './tools/native/index.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';

const SEARCH_KEY = 'canary-span-key-77d2';
const ARGUMENT_TEXT = 'canary-argument-text-19be';
const CONVERSATION_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

const exporter = new InMemorySpanExporter();
let telemetry: Telemetry;
let model: ScriptedModel;
let api: RecordingApi;
let httpTools: HttpToolRunner;

beforeAll(async () => {
  telemetry = startTelemetry({
    service: 'executor-test',
    env: {},
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  model = await startScriptedModel({
    script: [
      {
        toolCalls: [{ id: 'call_1', name: 'search', arguments: { q: ARGUMENT_TEXT } }],
        usage: { prompt_tokens: 21, completion_tokens: 8 },
        // The server names the exact model that answered, which differs from the alias requested.
        model: 'scripted-model-2026-05-01',
      },
      { content: 'done', usage: { prompt_tokens: 40, completion_tokens: 2 } },
    ],
  });
  api = await startRecordingApi({ routes: [{ method: 'GET', path: '/search', reply: { body: { ok: 1 } } }] });
  httpTools = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
});

afterAll(async () => {
  await Promise.all([model.stop(), api.stop(), httpTools.close()]);
  await telemetry.shutdown();
});

it('each model call is a `chat` span naming the conversation and the model and completion that answered, each tool call an `execute_tool` span, and no span holds arguments or secrets', async () => {
  const outcome = await runAgentLoop(
    {
      model: { name: 'scripted-model', temperature: 0.2 },
      conversationId: CONVERSATION_ID,
      messages: [{ role: 'user', content: 'look it up' }],
      tools: [searchTool(api.url)],
      maxSteps: 3,
    },
    {
      model: new OpenAiChatClient({ baseUrl: model.baseUrl, apiKey: 'canary-model-key-0c3a' }),
      executeTool: toolExecutor(
        {
          http: httpTools,
          dynamic: new DynamicToolRunner({ client: httpTools.client }),
          native: new NativeToolRegistry(),
        },
        { vault: { SEARCH_KEY }, account: { id: 'acme' } },
      ),
      emit: () => {},
    },
    new AbortController().signal,
  );
  expect(outcome.type).toBe('done');
  expect(api.requests[0]?.headers['x-api-key']).toBe(SEARCH_KEY);

  const spans = exporter.getFinishedSpans();
  const chats = spans.filter((span) => span.name === 'chat scripted-model');
  expect(chats.map((span) => span.attributes)).toEqual([
    expect.objectContaining({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'scripted-model',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.usage.input_tokens': 21,
      'gen_ai.usage.output_tokens': 8,
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.response.model': 'scripted-model-2026-05-01',
      'gen_ai.response.id': 'chatcmpl-scripted-1',
      'gen_ai.conversation.id': CONVERSATION_ID,
    }),
    expect.objectContaining({
      'gen_ai.usage.input_tokens': 40,
      'gen_ai.usage.output_tokens': 2,
      'gen_ai.response.model': 'scripted-model',
      'gen_ai.response.id': 'chatcmpl-scripted-2',
      'gen_ai.conversation.id': CONVERSATION_ID,
    }),
  ]);
  const tools = spans.filter((span) => span.name === 'execute_tool search');
  expect(tools.map((span) => span.attributes)).toEqual([
    expect.objectContaining({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'search',
      'gen_ai.tool.call.id': 'call_1',
    }),
  ]);

  const everything = JSON.stringify(
    spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events })),
  );
  for (const secret of [SEARCH_KEY, ARGUMENT_TEXT, 'canary-model-key-0c3a'])
    expect(everything).not.toContain(secret);
});
