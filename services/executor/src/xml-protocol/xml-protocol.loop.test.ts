// The real agent loop with the adapter as its model (must-show 5 of issue 5): a scripted model speaking
// `<ACTION>` completes the same two-tool task as a natively calling one, with the same events, and its
// mistakes come back to it as observations while the task goes on.
import { ErrorCode, type ChatMessage, type HttpTool, type ToolDefinition } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  type ModelStep,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { searchTool } from '../__fixtures__/tasks.js';
import { runAgentLoop, type ChatModel, type LoopOutcome, type ProgressEvent } from '../agent-loop.js';
import { OpenAiChatClient } from '../llm/index.js';
import { HttpToolRunner, toolFailure } from '../tools/index.js';
import { XmlToolProtocolModel } from './xml-tool-protocol-model.js';

const SEARCH_KEY = 'canary-search-key-77aa';

/** A POST tool imported from OpenAPI: its source id `weather:forecast` is what the ACTION names. */
function forecastTool(origin: string): HttpTool {
  return {
    type: 'HTTP',
    name: 'weather__forecast',
    description: 'forecasts the weather',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        options: {
          type: 'object',
          properties: { days: { type: 'integer', minimum: 1 } },
          required: ['days'],
          additionalProperties: false,
        },
      },
      required: ['city', 'options'],
      additionalProperties: false,
    },
    origin: { format: 'openapi', id: 'weather:forecast' },
    execution: { method: 'POST', url: `${origin}/forecast`, param_placement: 'body' },
  };
}

const action = (toolId: string, inputs: Record<string, string>) =>
  `<ACTION>\n  <tool_id>${toolId}</tool_id>\n  <inputs>\n${Object.entries(inputs)
    .map(([name, value]) => `    <input name="${name}"><![CDATA[${value}]]></input>`)
    .join('\n')}\n  </inputs>\n</ACTION>`;

let model: ScriptedModel | undefined;
let api: RecordingApi | undefined;
let runner: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), api?.stop(), runner?.close()]);
  model = api = runner = undefined;
});

interface Run {
  outcome: LoopOutcome;
  events: ProgressEvent[];
  model: ScriptedModel;
  api: RecordingApi;
}

async function runTask(script: ModelStep[], protocol: 'native' | 'xml'): Promise<Run> {
  await Promise.all([model?.stop(), api?.stop(), runner?.close()]);
  model = await startScriptedModel({ script });
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/search', reply: { body: { hits: 3 } } },
      {
        method: 'POST',
        path: '/forecast',
        reply: (request) => ({ body: { city: (request.body as { city: string }).city, sky: 'sunny' } }),
      },
    ],
  });
  runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] }, defaultTimeoutMs: 10_000 });
  const http = runner;
  const tools: ToolDefinition[] = [searchTool(api.url), forecastTool(api.url)];
  const client = new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000, maxRetries: 0 });
  const chatModel: ChatModel = protocol === 'xml' ? new XmlToolProtocolModel(client, { tools }) : client;
  const events: ProgressEvent[] = [];
  const outcome = await runAgentLoop(
    {
      model: { name: 'scripted-model' },
      messages: [
        { role: 'system', content: 'You are a test agent.' },
        { role: 'user', content: 'search agentmesh, then the weather in Oslo' },
      ],
      tools,
      maxSteps: 6,
    },
    {
      model: chatModel,
      executeTool: (tool, args, { signal }) =>
        tool.type === 'HTTP'
          ? http.run(tool, args, { vault: { SEARCH_KEY }, signal })
          : Promise.resolve(toolFailure(ErrorCode.TOOL_ERROR, 'not an HTTP tool')),
      // What the model calls used is not what this test is about (agent-loop.test.ts, budget).
      // Nor tool_call_delta: calls parsed from ACTION text have none, natively streamed ones do.
      emit: (event) => {
        if (event.type !== 'step_finished' && event.type !== 'tool_call_delta') events.push(event);
      },
    },
    new AbortController().signal,
  );
  return { outcome, events, model, api };
}

const messagesOf = (request: { body: unknown }) => (request.body as { messages: ChatMessage[] }).messages;
const lastMessage = (request: { body: unknown }) => messagesOf(request).at(-1);
const chunkText = (events: ProgressEvent[]) =>
  events.flatMap((event) => (event.type === 'message_chunk' ? [event.data.delta] : [])).join('');
/** Event types with each run of message_chunks as one: how text is cut into deltas is the server's choice. */
const shapeOf = (events: ProgressEvent[]) =>
  events.map((event) => event.type).filter((type, i, all) => type !== 'message_chunk' || all[i - 1] !== type);
/** What a client sees of each tool event, without the ids and timings that differ between any two runs. */
const toolEventsOf = (events: ProgressEvent[]) =>
  events.flatMap((event): Record<string, unknown>[] => {
    if (event.type === 'tool_start')
      return [{ type: event.type, tool: event.data.tool, arguments: event.data.arguments }];
    if (event.type !== 'tool_result') return [];
    const { call_id: _id, duration_ms: _ms, ...rest } = event.data;
    return [{ type: event.type, ...rest }];
  });

const FINAL_ANSWER = 'agentmesh has 3 hits; Oslo will be sunny.';

describe('the agent loop with a model on the ACTION protocol', () => {
  it('when the model speaks <ACTION>, a two-tool task gives the same events as the function-calling run', async () => {
    const native = await runTask(
      [
        { content: 'Searching first.', toolCalls: [{ name: 'search', arguments: { q: 'agentmesh' } }] },
        { toolCalls: [{ name: 'weather__forecast', arguments: { city: 'Oslo', options: { days: 2 } } }] },
        { content: FINAL_ANSWER },
      ],
      'native',
    );
    const xml = await runTask(
      [
        { content: `Searching first.\n\n${action('search', { q: 'agentmesh' })}\n` },
        { content: action('weather:forecast', { city: 'Oslo', options: '{"days": 2}' }) },
        { content: FINAL_ANSWER },
      ],
      'xml',
    );

    expect(native.outcome).toMatchObject({ type: 'done', data: { message: FINAL_ANSWER, steps: 3 } });
    expect(xml.outcome).toMatchObject({ type: 'done', data: { message: FINAL_ANSWER, steps: 3 } });
    expect(shapeOf(xml.events)).toEqual(shapeOf(native.events));
    expect(shapeOf(xml.events)).toEqual([
      'message_chunk',
      'tool_start',
      'tool_result',
      'tool_start',
      'tool_result',
      'message_chunk',
    ]);
    expect(chunkText(xml.events)).toBe(chunkText(native.events));
    expect(toolEventsOf(xml.events)).toEqual(toolEventsOf(native.events));
    expect(toolEventsOf(xml.events)).toEqual([
      { type: 'tool_start', tool: 'search', arguments: { q: 'agentmesh' } },
      { type: 'tool_result', tool: 'search', ok: true, result: { hits: 3 } },
      { type: 'tool_start', tool: 'weather__forecast', arguments: { city: 'Oslo', options: { days: 2 } } },
      { type: 'tool_result', tool: 'weather__forecast', ok: true, result: { city: 'Oslo', sky: 'sunny' } },
    ]);

    // The APIs saw the same calls, credential included.
    expect(xml.api.requests.map((r) => [r.method, r.path, r.query, r.body])).toEqual(
      native.api.requests.map((r) => [r.method, r.path, r.query, r.body]),
    );
    expect(xml.api.requests[0]!.headers['x-api-key']).toBe(SEARCH_KEY);

    // What the model read: its own ACTION back, then the observation in seed 003 §3.4's format.
    const [, second, third] = xml.model.requests;
    expect(messagesOf(second!).slice(-2)).toEqual([
      { role: 'assistant', content: `Searching first.\n\n${action('search', { q: 'agentmesh' })}` },
      {
        role: 'user',
        content: '<OBSERVATION>Tool search executed successfully. Output: {"hits":3}</OBSERVATION>',
      },
    ]);
    expect(lastMessage(third!)).toEqual({
      role: 'user',
      content:
        '<OBSERVATION>Tool weather:forecast executed successfully. Output: {"city":"Oslo","sky":"sunny"}</OBSERVATION>',
    });
    expect(
      xml.model.requests.every((request) => (request.body as { tools?: unknown }).tools === undefined),
    ).toBe(true);
  });

  it('when ACTIONs have bad JSON, an unknown tool or broken XML, the model hears what was wrong and the task goes on', async () => {
    const run = await runTask(
      [
        // Two calls the loop refuses: an input that is not JSON, and a tool id nobody has.
        {
          content: `${action('weather:forecast', { city: 'Oslo', options: '{days: 2}' })}\n${action('weather:radar', { city: 'Oslo' })}`,
        },
        // A block the adapter cannot read: the model is asked again within the same step.
        {
          content:
            '<ACTION><tool_id>weather:forecast</tool_id><inputs><input name="city">Oslo</inputs></ACTION>',
        },
        { content: action('weather:forecast', { city: 'Oslo', options: '{"days": 2}' }) },
        { content: FINAL_ANSWER },
      ],
      'xml',
    );

    expect(run.outcome).toMatchObject({ type: 'done', data: { message: FINAL_ANSWER, steps: 3 } });
    expect(shapeOf(run.events)).toEqual([
      'tool_start',
      'tool_start',
      'tool_result',
      'tool_result',
      'tool_start',
      'tool_result',
      'message_chunk',
    ]);
    expect(toolEventsOf(run.events).slice(0, 4)).toEqual([
      { type: 'tool_start', tool: 'weather__forecast', arguments: { city: 'Oslo', options: '{days: 2}' } },
      { type: 'tool_start', tool: 'weather:radar', arguments: { city: 'Oslo' } },
      {
        type: 'tool_result',
        tool: 'weather__forecast',
        ok: false,
        error: expect.objectContaining({
          code: 'INVALID_REQUEST',
          message: 'invalid arguments: options: must be object',
        }),
      },
      {
        type: 'tool_result',
        tool: 'weather:radar',
        ok: false,
        error: expect.objectContaining({ code: 'NOT_FOUND' }),
      },
    ]);

    const [, second, third, fourth] = run.model.requests;
    const refusals = (lastMessage(second!)?.content as string).split('\n');
    expect(refusals).toHaveLength(2);
    expect(refusals[0]).toMatch(
      /^<OBSERVATION>Tool weather:forecast failed\. Error type: INVALID_REQUEST\. Message: invalid arguments: options: must be object\. Details: input "options" is not valid JSON \(.+\); \{"issues":.+\}<\/OBSERVATION>$/,
    );
    expect(refusals[1]).toBe(
      '<OBSERVATION>Tool weather:radar failed. Error type: NOT_FOUND. Message: there is no tool named "weather:radar"; available tools: search, weather__forecast. Details: the tool ids are: search, weather:forecast</OBSERVATION>',
    );
    expect(lastMessage(third!)).toEqual({
      role: 'user',
      content:
        '<OBSERVATION>Tool weather:forecast failed. Error type: ActionFormatError. Message: </inputs> comes while <input name="city"> inside it is still open. ' +
        'Details: The ACTION was not run; write it again in the format the system prompt describes.</OBSERVATION>',
    });
    expect(lastMessage(fourth!)?.content).toBe(
      '<OBSERVATION>Tool weather:forecast executed successfully. Output: {"city":"Oslo","sky":"sunny"}</OBSERVATION>',
    );
    // Only the corrected call reached the API.
    expect(run.api.requests.map((r) => r.body)).toEqual([{ city: 'Oslo', options: { days: 2 } }]);
  });
});
