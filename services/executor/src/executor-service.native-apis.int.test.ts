/**
 * Native model APIs through a running executor on a real NATS server, the model a loopback server
 * replaying recorded Anthropic Messages streams (src/__fixtures__/native/README.md): a tool loop whose
 * first turn thinks (signed) and calls a tool, whose second answers — the thinking block goes back to
 * Anthropic unchanged with the tool result, the conversation prefix gets a cache breakpoint; prompt-cache
 * usage reaches `step_finished` and `done` and is priced by MODEL_PRICES' cache prices; an overloaded
 * (529) Anthropic is retried; Gemini and OpenAI Responses agents answer through their adapters; a
 * Bedrock Converse agent (recorded Converse streams in their binary eventstream framing, SigV4 from the
 * vault) streams text and reasoning, runs two interleaved tool uses, reports and prices cache tokens, rides
 * out throttling and a model stream error; an `api` this executor does not know ends the task before
 * anything is sent. With the model config's `stream: false`, each API (and OpenAI-compatible chat) is
 * asked for a whole answer (recorded `*-whole.json`, their tool calls left out) and the task is done.
 */
import { followTaskEvents } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  type AssembledModelConfig,
  type AssembledTask,
  type HttpTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import {
  anthropicError,
  bedrockError,
  bedrockModelStreamErrorFrame,
  bedrockStream,
  errorReply,
  recordedBedrockStream,
  recordedEvents,
  recordedStream,
  recordedWhole,
} from './__fixtures__/native/recordings.js';
import { assembledTask } from './__fixtures__/tasks.js';

const MODEL_KEY = 'sk-ant-canary-e2e-77f3';
const vaultKeys = generateVaultKeyPair('exec-native-1');
const BEDROCK_MODEL = 'anthropic.claude-sonnet-4-5-v1:0';
const AWS_KEY_ID = 'AKIACANARYE2E5';
const AWS_SECRET = 'wJalrXUtnFEMI/K7MDENG/canary-e2e-secret';
const AWS_CREDENTIALS = JSON.stringify({ access_key_id: AWS_KEY_ID, secret_access_key: AWS_SECRET });
const PRICES = {
  [BEDROCK_MODEL]: {
    input_per_million_usd: 3,
    output_per_million_usd: 15,
    cache_read_per_million_usd: 0.3,
    cache_write_per_million_usd: 3.75,
  },
  'claude-sonnet-5': {
    input_per_million_usd: 3,
    output_per_million_usd: 15,
    cache_read_per_million_usd: 0.3,
    cache_write_per_million_usd: 3.75,
  },
};

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let weatherApi: RecordingApi;
let executor: { stop(): Promise<void> };

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  model = await startScriptedModel({ anyPath: true });
  weatherApi = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/weather', reply: { body: { city: 'San Francisco', temp_c: 18 } } },
      { method: 'GET', path: '/value', reply: { body: { stored: true } } },
      { method: 'GET', path: '/glob', reply: { body: { files: ['src/cursor.ts'] } } },
    ],
  });
  executor = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    env: { MODEL_PRICES: JSON.stringify(PRICES), LLM_MAX_RETRIES: '2' },
  });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await model?.stop();
  await weatherApi?.stop();
  await nats?.stop();
});

function weatherTool(): HttpTool {
  return {
    type: 'HTTP',
    name: 'get_weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execution: { method: 'GET', url: `${weatherApi.url}/weather`, param_placement: 'query' },
  } as HttpTool;
}

function newTask(
  api: string,
  modelName = 'claude-sonnet-5',
  {
    key = MODEL_KEY,
    tools = [weatherTool()],
    model: modelFields,
  }: { key?: string; tools?: HttpTool[]; model?: Partial<AssembledModelConfig> } = {},
): AssembledTask {
  return assembledTask({
    ...(modelFields === undefined ? {} : { model: modelFields }),
    traceId: newTraceId(),
    accountId: 'acme',
    api,
    modelName,
    provider: 'generic',
    modelBaseUrl: model.baseUrl.replace(/\/v1$/, ''),
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: key },
    sealFor: vaultKeys,
    userMessage: 'What is the weather in San Francisco?',
    tools,
  });
}

async function run(task: AssembledTask): Promise<TaskEvent[]> {
  const account = task.task_meta.account_id;
  await js.publish(taskAssembledSubject(account), JSON.stringify(task));
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: account,
    traceId: task.task_meta.trace_id,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
  }
  if (!events.some(isTerminalEvent)) throw new Error(`no terminal event: ${JSON.stringify(events)}`);
  return events;
}

/** The recorded thinking turn, its text block replaced by a tool call of the recorded tool-call stream. */
function thinkingThenToolCall() {
  const thinking = recordedEvents('anthropic-reasoning.chunks.txt').slice(0, 9);
  const tool = recordedEvents('anthropic-tool-call.chunks.txt')
    .slice(6)
    .map((event) => ('index' in event ? { ...event, index: 1 } : event));
  const events = [...thinking, ...tool];
  return { raw: recordedStream('anthropic-text.chunks.txt').raw, events };
}

describe('native model APIs in the executor', () => {
  it('when an anthropic-messages agent thinks and calls a tool, the tool runs, the signed thinking goes back with its result, and the second turn answers', async () => {
    const { events: turn1 } = thinkingThenToolCall();
    const before = model.requests.length;
    model.enqueue(
      { raw: { body: turn1.map((e) => `event: ${String(e['type'])}\ndata: ${JSON.stringify(e)}\n\n`) } },
      recordedStream('anthropic-text.chunks.txt'),
    );
    const events = await run(newTask('anthropic-messages'));

    expect(events.at(-1)).toMatchObject({ type: 'done', data: { steps: 2, finish_reason: 'stop' } });
    expect(
      events
        .filter((e) => e.type === 'tool_thinking')
        .map((e) => e.data.delta)
        .join(''),
    ).toMatch(/Euclidean/);
    const result = events.find((e) => e.type === 'tool_result');
    expect(result).toMatchObject({ data: { tool: 'get_weather' } });
    expect(weatherApi.requests.at(-1)?.query).toEqual({ city: 'San Francisco' });

    const [first, second] = model.requests.slice(before);
    expect(first?.path).toBe('/v1/messages');
    expect(first?.headers['authorization']).toBe(`Bearer ${MODEL_KEY}`);
    const sent = second?.body as {
      messages: { role: string; content: Record<string, unknown>[] }[];
      system: unknown[];
    };
    const assistant = sent.messages[1];
    expect(assistant?.content.map((b) => b['type'])).toEqual(['thinking', 'tool_use']);
    expect(String(assistant?.content[0]?.['signature'])).toMatch(/^EsECCokBCBAYAipA9i3H/);
    const toolResult = sent.messages[2]?.content[0];
    expect(toolResult).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY',
      cache_control: { type: 'ephemeral' },
    });
    expect(sent.system).toEqual([
      { type: 'text', text: 'You are a test agent.', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('when the agent’s model sets a thinking budget and a temperature, Anthropic is asked to think with that budget and no temperature; without the budget, the temperature is sent', async () => {
    const before = model.requests.length;
    model.enqueue(
      recordedStream('anthropic-reasoning.chunks.txt'),
      recordedStream('anthropic-text.chunks.txt'),
    );
    const thinking = await run(
      newTask('anthropic-messages', 'claude-sonnet-5', {
        model: { thinking_budget_tokens: 2048, temperature: 0.4 },
      }),
    );
    expect(thinking.at(-1)).toMatchObject({ type: 'done' });
    await run(newTask('anthropic-messages', 'claude-sonnet-5', { model: { temperature: 0.4 } }));
    const [withBudget, withTemperature] = model.requests
      .slice(before)
      .map((r) => r.body as Record<string, unknown>);
    expect(withBudget).toMatchObject({
      thinking: { type: 'enabled', budget_tokens: 2048 },
      max_tokens: 6144,
    });
    expect(withBudget?.['temperature']).toBeUndefined();
    expect(withTemperature).toMatchObject({ temperature: 0.4 });
    expect(withTemperature?.['thinking']).toBeUndefined();
  });

  it('when Anthropic reads and writes its prompt cache, step_finished and done report the cache tokens and the cost prices them apart', async () => {
    model.enqueue(recordedStream('anthropic-prompt-cache.chunks.txt'));
    const events = await run(newTask('anthropic-messages'));
    const usage = {
      prompt_tokens: 9632,
      completion_tokens: 198,
      total_tokens: 9830,
      cache_read_tokens: 6289,
      cache_write_tokens: 3337,
    };
    const cost = (6 * 3 + 6289 * 0.3 + 3337 * 3.75 + 198 * 15) / 1e6;
    expect(events.find((e) => e.type === 'step_finished')?.data).toMatchObject({
      usage,
      cost_usd: cost,
      total_usage: usage,
    });
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { usage, cost_usd: cost } });
  });

  it('when Anthropic is overloaded (529) once, the turn is retried and the task is done', async () => {
    const before = model.requests.length;
    model.enqueue(
      errorReply(529, anthropicError('overloaded_error', 'Overloaded')),
      recordedStream('anthropic-text.chunks.txt'),
    );
    const events = await run(newTask('anthropic-messages'));
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: expect.stringMatching(/^Hello! I'm doing well/) },
    });
    expect(model.requests.length - before).toBe(2);
  });

  it('when a gemini agent answers, its text streams as message chunks and done reports its usage', async () => {
    const before = model.requests.length;
    model.enqueue(recordedStream('gemini-reasoning.chunks.txt'));
    const events = await run(newTask('gemini', 'gemini-3-pro-preview'));
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: 'There are **3** "r"s in strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.',
        usage: { prompt_tokens: 9, completion_tokens: 285, total_tokens: 294 },
      },
    });
    expect(model.requests[before]?.path).toBe('/v1beta/models/gemini-3-pro-preview:streamGenerateContent');
    expect(model.requests[before]?.headers['x-goog-api-key']).toBe(MODEL_KEY);
  });

  it('when an openai-responses agent answers, its text streams as message chunks and done reports its usage', async () => {
    const before = model.requests.length;
    model.enqueue(recordedStream('openai-responses-text.chunks.txt'));
    const events = await run(newTask('openai-responses', 'gpt-5.1-codex-max'));
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'The final result is **570**.', usage: { prompt_tokens: 299, completion_tokens: 12 } },
    });
    // The task's base_url is the server's origin here; a real one names the version (`…/v1`).
    expect(model.requests[before]?.path).toBe('/responses');
  });

  it('when the model names an api this executor does not know, the task ends INVALID_REQUEST and the model is not called', async () => {
    const before = model.requests.length;
    const events = await run(newTask('cohere-v2'));
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'INVALID_REQUEST', message: expect.stringContaining('cohere-v2') },
    });
    expect(model.requests.length).toBe(before);
  });
});

/** An HTTP tool on the recording API taking one string argument in the query. */
function queryTool(name: string, path: string, argument: string): HttpTool {
  return {
    type: 'HTTP',
    name,
    description: name,
    parameters: { type: 'object', properties: { [argument]: { type: 'string' } }, required: [argument] },
    execution: { method: 'GET', url: `${weatherApi.url}${path}`, param_placement: 'query' },
  } as HttpTool;
}

function bedrockTask(tools?: HttpTool[]): AssembledTask {
  return newTask('bedrock-converse', BEDROCK_MODEL, { key: AWS_CREDENTIALS, ...(tools ? { tools } : {}) });
}

function expectNoAwsSecret(events: TaskEvent[]): void {
  const text = JSON.stringify(events);
  expect(text).not.toContain(AWS_SECRET);
  expect(text).not.toContain(AWS_KEY_ID);
}

describe('Bedrock Converse in the executor', () => {
  it('when a bedrock-converse agent answers, its text streams as message chunks, done reports its usage, and the request is SigV4-signed with the vault keys', async () => {
    const before = model.requests.length;
    model.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const events = await run(bedrockTask());
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: expect.stringMatching(/^Let me count the "r"s in "strawberry".*There are \*\*3\*\* r's/s),
        finish_reason: 'stop',
        usage: { prompt_tokens: 22, completion_tokens: 55, total_tokens: 77 },
      },
    });
    const sent = model.requests[before];
    expect(sent?.path).toBe(`/model/${encodeURIComponent(BEDROCK_MODEL)}/converse-stream`);
    expect(sent?.headers['authorization']).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS_KEY_ID}/\\d{8}/us-east-1/bedrock/aws4_request`),
    );
    expect(JSON.stringify(sent)).not.toContain(AWS_SECRET);
    expectNoAwsSecret(events);
  });

  it('when Bedrock streams two interleaved tool uses, both run with their own arguments, and both results go back in one user turn', async () => {
    const before = model.requests.length;
    const valueCalls = weatherApi.requests.filter((r) => r.path === '/value').length;
    model.enqueue(
      recordedBedrockStream('bedrock-two-tool-uses.chunks.txt'),
      recordedBedrockStream('bedrock-text.chunks.txt'),
    );
    const events = await run(
      bedrockTask([queryTool('test-tool', '/value', 'value'), queryTool('glob_search', '/glob', 'pattern')]),
    );
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { steps: 2 } });
    const starts = events.flatMap((e) => (e.type === 'tool_start' ? [e.data] : []));
    expect(starts.map((s) => [s.tool, s.arguments])).toEqual([
      ['test-tool', { value: 'Sparkle Day' }],
      ['glob_search', { pattern: '**/*cursor*' }],
    ]);
    expect(events.filter((e) => e.type === 'tool_result')).toHaveLength(2);
    expect(weatherApi.requests.filter((r) => r.path === '/value').length - valueCalls).toBe(1);
    expect(weatherApi.requests.filter((r) => r.path === '/glob').at(-1)?.query).toEqual({
      pattern: '**/*cursor*',
    });

    const second = model.requests[before + 1]?.body as {
      messages: { role: string; content: Record<string, unknown>[] }[];
    };
    const assistant = second.messages[1];
    expect(assistant?.content.map((b) => Object.keys(b)[0])).toEqual(['toolUse', 'toolUse']);
    const results = second.messages[2]?.content ?? [];
    expect(results.map((b) => (b['toolResult'] as { toolUseId?: string } | undefined)?.toolUseId)).toEqual([
      'tool-use-id',
      'functions.glob_search:0',
      undefined, // the loop prefix's cache point
    ]);
    expect(results[2]).toEqual({ cachePoint: { type: 'default' } });
    expectNoAwsSecret(events);
  });

  it('when the model reasons, the reasoning streams as tool_thinking and the answer follows', async () => {
    model.enqueue(recordedBedrockStream('bedrock-reasoning.chunks.txt'));
    const events = await run(bedrockTask());
    const thinking = events
      .filter((e) => e.type === 'tool_thinking')
      .map((e) => e.data.delta)
      .join('');
    expect(thinking).toMatch(/^Let me count the r's.*So there are 3 r's\.$/s);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: expect.stringMatching(/^There are \*\*3\*\* r's/) },
    });
  });

  it('when Bedrock reads and writes its prompt cache, step_finished and done report the cache tokens and the cost prices them apart', async () => {
    model.enqueue(recordedBedrockStream('bedrock-prompt-cache.chunks.txt'));
    const events = await run(bedrockTask());
    const usage = {
      prompt_tokens: 22 + 1658 + 312,
      completion_tokens: 55,
      total_tokens: 2047,
      cache_read_tokens: 1658,
      cache_write_tokens: 312,
    };
    const cost = (22 * 3 + 1658 * 0.3 + 312 * 3.75 + 55 * 15) / 1e6;
    expect(events.find((e) => e.type === 'step_finished')?.data).toMatchObject({ usage, cost_usd: cost });
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { usage, cost_usd: cost } });
  });

  it('when Bedrock throttles (429) with a Retry-After and then without one, the turn is retried and the task is done', async () => {
    const before = model.requests.length;
    const throttled = (headers: Record<string, string> = {}) =>
      bedrockError(
        429,
        'ThrottlingException',
        'Too many requests, please wait before trying again.',
        headers,
      );
    model.enqueue(
      throttled({ 'retry-after': '1' }),
      throttled(),
      recordedBedrockStream('bedrock-text.chunks.txt'),
    );
    const events = await run(bedrockTask());
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { finish_reason: 'stop' } });
    expect(model.requests.length - before).toBe(3);
  });

  it('when the stream reports modelStreamErrorException before any text, the turn is retried; after text, the task ends LLM_UNAVAILABLE', async () => {
    model.enqueue(
      bedrockStream([{ messageStart: { role: 'assistant' } }], [bedrockModelStreamErrorFrame()]),
      recordedBedrockStream('bedrock-text.chunks.txt'),
    );
    const retried = await run(bedrockTask());
    expect(retried.at(-1)).toMatchObject({ type: 'done', data: { finish_reason: 'stop' } });

    model.enqueue(
      bedrockStream(recordedEvents('bedrock-text.chunks.txt').slice(0, 4), [bedrockModelStreamErrorFrame()]),
    );
    const broken = await run(bedrockTask());
    expect(broken.at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'LLM_UNAVAILABLE', message: expect.stringContaining('ModelStreamErrorException') },
    });
    expectNoAwsSecret(broken);
  });
});

type Json = Record<string, unknown>;
const list = (value: unknown): Json[] => value as Json[];

/** A recorded whole answer with its tool calls left out (`edit` drops them), so the task ends in one turn. */
function wholeWithoutCalls(file: string, edit: (body: Json) => void) {
  const reply = recordedWhole(file);
  const body = JSON.parse(String(reply.raw.body)) as Json;
  edit(body);
  return { raw: { ...reply.raw, body: JSON.stringify(body) } };
}

const notStreamed = { model: { stream: false } };

describe('native model APIs in the executor, stream: false', () => {
  it('when an anthropic-messages agent says stream: false, the whole Message answers: reasoning as tool_thinking, the text as one chunk, cache usage in done', async () => {
    const before = model.requests.length;
    model.enqueue(
      wholeWithoutCalls('anthropic-whole.json', (body) => {
        body['content'] = list(body['content']).filter((b) => b['type'] !== 'tool_use');
        body['stop_reason'] = 'end_turn';
      }),
    );
    const events = await run(newTask('anthropic-messages', 'claude-sonnet-5', notStreamed));
    expect((model.requests[before]?.body as Record<string, unknown>)['stream']).toBe(false);
    expect(events.filter((e) => e.type === 'tool_thinking').map((e) => e.data.delta)).toEqual([
      'The user wants me to call checkSandboxErrors immediately.',
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: 'Checking the sandbox and the weather.',
        finish_reason: 'stop',
        usage: { prompt_tokens: 599 + 1024 + 3068, cache_read_tokens: 1024, cache_write_tokens: 3068 },
      },
    });
  });

  it('when a gemini agent says stream: false, generateContent answers and the task is done with its usage', async () => {
    const before = model.requests.length;
    model.enqueue(
      wholeWithoutCalls('gemini-whole.json', (body) => {
        const content = list(body['candidates'])[0]?.['content'] as Json;
        content['parts'] = list(content['parts']).filter((p) => !p['functionCall']);
      }),
    );
    const events = await run(newTask('gemini', 'gemini-3-pro-preview', notStreamed));
    expect(model.requests[before]?.path).toBe('/v1beta/models/gemini-3-pro-preview:generateContent');
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: 'Looking up both cities.',
        usage: { prompt_tokens: 1210, completion_tokens: 139, cache_read_tokens: 1024 },
      },
    });
  });

  it('when an openai-responses agent says stream: false, the whole Response answers and the task is done with its usage', async () => {
    const before = model.requests.length;
    model.enqueue(
      wholeWithoutCalls('openai-responses-whole.json', (body) => {
        body['output'] = list(body['output']).filter((i) => i['type'] !== 'function_call');
      }),
    );
    const events = await run(newTask('openai-responses', 'gpt-5.1-codex-max', notStreamed));
    expect((model.requests[before]?.body as Record<string, unknown>)['stream']).toBe(false);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: expect.stringMatching(/Final result: 570$/),
        usage: { prompt_tokens: 2006, completion_tokens: 163, cache_read_tokens: 1920 },
      },
    });
  });

  it('when a bedrock-converse agent says stream: false, Converse answers and the task is done with its usage', async () => {
    const before = model.requests.length;
    model.enqueue(
      wholeWithoutCalls('bedrock-whole.json', (body) => {
        const message = (body['output'] as Json)['message'] as Json;
        message['content'] = list(message['content']).filter((b) => !b['toolUse']);
        body['stopReason'] = 'end_turn';
      }),
    );
    const events = await run(
      newTask('bedrock-converse', BEDROCK_MODEL, { key: AWS_CREDENTIALS, ...notStreamed }),
    );
    expect(model.requests[before]?.path).toBe(`/model/${encodeURIComponent(BEDROCK_MODEL)}/converse`);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: {
        message: "Sure! I'll look up both values simultaneously right away!",
        finish_reason: 'stop',
        usage: { prompt_tokens: 694 + 1024 + 512, cache_read_tokens: 1024, cache_write_tokens: 512 },
      },
    });
    expectNoAwsSecret(events);
  });

  it('when an openai-chat agent says stream: false, the request asks for no stream and the whole completion answers', async () => {
    const before = model.requests.length;
    model.enqueue({
      raw: {
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          id: 'chatcmpl-abc123',
          object: 'chat.completion',
          model: 'gpt-4o-mini',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Sunny.' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 20, completion_tokens: 2, total_tokens: 22 },
        }),
      },
    });
    const events = await run(newTask('openai-chat', 'gpt-4o-mini', notStreamed));
    const sent = model.requests[before]?.body as Record<string, unknown>;
    expect(sent['stream']).toBe(false);
    expect(sent['stream_options']).toBeUndefined();
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'Sunny.', usage: { prompt_tokens: 20, completion_tokens: 2 } },
    });
  });
});
