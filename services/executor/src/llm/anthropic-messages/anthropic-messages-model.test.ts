// The Anthropic Messages adapter against recorded Anthropic streams replayed by a real loopback server
// (see src/__fixtures__/native/README.md for where each recording comes from).
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  anthropicError,
  anthropicOverloadedMidStream,
  errorReply,
  recordedStream,
  recordedWhole,
} from '../../__fixtures__/native/recordings.js';
import { callCollecting, callsOfPieces, type ToolCallPiece } from '../../__fixtures__/native/adapter-call.js';
import { LlmResponseError, LlmUnavailableError } from '../errors.js';
import { ModelEndpointGuard } from '../model-endpoint-guard.js';
import type { ChatRequest } from '../chat-types.js';
import { AnthropicMessagesModel } from './anthropic-messages-model.js';

const KEY = 'sk-ant-canary-3c9e';
let server: ScriptedModel;
const guard = new ModelEndpointGuard({ allowHosts: ['127.0.0.1'] });
const waits: number[] = [];

beforeAll(async () => {
  server = await startScriptedModel({ anyPath: true });
});
afterAll(async () => {
  await server?.stop();
  await guard.close();
});
beforeEach(() => {
  waits.length = 0;
});

function model(): AnthropicMessagesModel {
  return new AnthropicMessagesModel({
    baseUrl: server.baseUrl, // `…/v1`: accepted, the SDK adds `/v1/messages`
    apiKey: KEY,
    endpointGuard: guard,
    maxRetries: 2,
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
  });
}

const tools = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'Weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } } },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'updateIssueList',
      description: 'Issues',
      parameters: { type: 'object', properties: {} },
    },
  },
];
const ask: ChatRequest = {
  model: 'claude-sonnet-5',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Hi' },
  ],
  tools,
};

const run = (request: ChatRequest = ask) => callCollecting(model(), request, server);

describe('Anthropic Messages adapter (recorded streams)', () => {
  it('when Claude streams text, each delta is handed on, the turn ends stop, and usage is read; the key goes only in its auth header', async () => {
    server.enqueue(recordedStream('anthropic-text.chunks.txt'));
    const { result, content, sent } = await run();
    expect(content).toEqual([
      'Hello',
      '! I',
      "'m doing well, thank you for asking",
      '. How are you doing today?',
      ' Is',
      ' there anything I can help you with?',
    ]);
    expect(result.message.content).toBe(content.join(''));
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({ prompt_tokens: 12, completion_tokens: 30, total_tokens: 42 });
    expect(result.usageReported).toBeUndefined();
    expect(result.responseId).toBe('msg_01QC4g3HwBThD4BaNtBckFDJ');
    expect(sent[0]?.path).toBe('/v1/messages');
    // The SDK (1.x) sends the key as a bearer token; it goes nowhere else.
    expect(sent[0]?.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(sent[0]?.headers['anthropic-version']).toBeDefined();
    expect(JSON.stringify(sent[0]?.body)).not.toContain(KEY);
  });

  it('when the request is built, the system prompt and the tool list carry cache breakpoints, and the conversation none before the loop starts', async () => {
    server.enqueue(recordedStream('anthropic-text.chunks.txt'));
    const { sent } = await run();
    const body = sent[0]?.body as {
      system: unknown;
      tools: Record<string, unknown>[];
      [key: string]: unknown;
    };
    expect(body['system']).toEqual([
      { type: 'text', text: 'You are terse.', cache_control: { type: 'ephemeral' } },
    ]);
    expect(body.tools[1]?.['cache_control']).toEqual({ type: 'ephemeral' });
    expect(body.tools[0]?.['cache_control']).toBeUndefined();
    expect(body.tools[0]?.['input_schema']).toEqual({
      type: 'object',
      properties: { city: { type: 'string' } },
    });
    expect(body['messages']).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Hi' }] }]);
    expect(body['stream']).toBe(true);
    expect(body['max_tokens']).toBe(4096);
  });

  it('when the agent sets a temperature, it is sent; with a thinking budget, thinking is enabled, max_tokens exceeds the budget, and the temperature is left out', async () => {
    server.enqueue(
      recordedStream('anthropic-text.chunks.txt'),
      recordedStream('anthropic-reasoning.chunks.txt'),
    );
    const plain = (await run({ ...ask, temperature: 0.3 })).sent[0]?.body as Record<string, unknown>;
    expect(plain['temperature']).toBe(0.3);
    expect(plain['thinking']).toBeUndefined();
    const thinking = (await run({ ...ask, temperature: 0.3, thinking_budget_tokens: 2048 })).sent[0]
      ?.body as Record<string, unknown>;
    expect(thinking['thinking']).toEqual({ type: 'enabled', budget_tokens: 2048 });
    expect(thinking['max_tokens']).toBe(2048 + 4096);
    expect(thinking['temperature']).toBeUndefined();
  });

  it('when Claude thinks, the thinking streams as reasoning and its signed block is kept on the turn; sent back, it leads the assistant turn unchanged, and the loop prefix gets a breakpoint', async () => {
    server.enqueue(recordedStream('anthropic-reasoning.chunks.txt'));
    const { result, reasoning } = await run();
    expect(reasoning.join('')).toMatch(
      /^I'm working through the Euclidean algorithm.*greatest common divisor\.$/,
    );
    expect(result.message.reasoning_content).toBe(reasoning.join(''));
    const state = result.message.provider_state as { api: string; thinking: Record<string, string>[] };
    expect(state.api).toBe('anthropic-messages');
    expect(state.thinking[0]?.signature).toMatch(/^EsECCokBCBAYAipA9i3H.*PGAE=$/);
    expect(result.usage.completion_tokens).toBe(373);

    server.enqueue(recordedStream('anthropic-text.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'toolu_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
          },
        ],
        provider_state: state,
      },
      { role: 'tool', tool_call_id: 'toolu_1', content: 'sunny' },
    ];
    const { sent } = await run({ ...ask, messages: conversation });
    const messages = (sent[0]?.body as { messages: unknown[] }).messages;
    expect(messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          type: 'thinking',
          thinking: state.thinking[0]?.['thinking'],
          signature: state.thinking[0]?.['signature'],
        },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Rome' } },
      ],
    });
    expect(messages[2]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_1',
          content: 'sunny',
          cache_control: { type: 'ephemeral' },
        },
      ],
    });
  });

  it('when Claude calls two tools in one turn after some text, both become tool calls in block order, arguments whole, finish tool_calls', async () => {
    server.enqueue(recordedStream('anthropic-two-tool-calls.chunks.txt'));
    const { result, content, toolCallDeltas } = await run();
    expect(content.join('')).toBe("I'll update the issue list for you.");
    expect(result.finishReason).toBe('tool_calls');
    expect(result.message.tool_calls).toEqual([
      {
        id: 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP',
        type: 'function',
        function: { name: 'updateIssueList', arguments: '{}' },
      },
      {
        id: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city": "San Francisco"}' },
      },
    ]);
    // Streamed pieces add up to each call, id and name on its first piece.
    expect(callsOfPieces(toolCallDeltas)).toEqual(
      (result.message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      })),
    );
  });

  it('when the prompt cache is read and written, usage counts both inside the prompt and names them; server tools are not tool calls', async () => {
    server.enqueue(recordedStream('anthropic-prompt-cache.chunks.txt'));
    const { result } = await run();
    expect(result.message.tool_calls).toBeUndefined();
    expect(result.message.content).toBe('The sum of the squares of the numbers 1 through 12 is **650**.');
    expect(result.usage).toEqual({
      prompt_tokens: 6 + 6289 + 3337,
      completion_tokens: 198,
      total_tokens: 6 + 6289 + 3337 + 198,
      cache_read_tokens: 6289,
      cache_write_tokens: 3337,
    });
  });

  it('when Anthropic answers 429 with retry-after and then 529 overloaded without one, the call waits the asked 2 s, then backs off, then succeeds', async () => {
    server.enqueue(
      errorReply(429, anthropicError('rate_limit_error', 'Number of requests has exceeded your rate limit'), {
        'retry-after': '2',
      }),
      errorReply(529, anthropicError('overloaded_error', 'Overloaded')),
      recordedStream('anthropic-text.chunks.txt'),
    );
    const { result, sent } = await run();
    expect(sent).toHaveLength(3);
    expect(result.attempts).toBe(3);
    expect(waits[0]).toBe(2000);
    expect(waits[1]).toBeLessThanOrEqual(1000);
  });

  it('when the stream reports overloaded_error after message_start, the attempt is retried', async () => {
    server.enqueue(anthropicOverloadedMidStream(), recordedStream('anthropic-text.chunks.txt'));
    const { result, sent } = await run();
    expect(sent).toHaveLength(2);
    expect(result.message.content).toMatch(/^Hello/);
  });

  it('when overload lasts past the retries, the call fails LLM_UNAVAILABLE naming 529', async () => {
    const overloaded = errorReply(529, anthropicError('overloaded_error', 'Overloaded'));
    server.enqueue(overloaded, overloaded, overloaded);
    const error = await model()
      .complete(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as LlmUnavailableError).detail).toMatchObject({ status: 529, attempts: 3 });
  });

  it('when Anthropic refuses the request (400) quoting the key, the call fails at once as LLM_ERROR and nothing carries the key', async () => {
    server.enqueue(errorReply(400, anthropicError('invalid_request_error', `bad key? ${KEY}`)));
    const before = server.requests.length;
    const error = await model()
      .complete(ask)
      .catch((e: unknown) => e);
    expect(server.requests.length - before).toBe(1);
    expect(error).toBeInstanceOf(LlmResponseError);
    const text = JSON.stringify({
      m: (error as Error).message,
      d: (error as LlmResponseError).detail,
      c: String((error as Error).cause),
    });
    expect(text).toContain('HTTP 400');
    expect(text).not.toContain(KEY);
  });

  it('when the endpoint is a loopback address not allowed, nothing is sent', async () => {
    const before = server.requests.length;
    const denied = new AnthropicMessagesModel({
      baseUrl: server.baseUrl,
      apiKey: KEY,
      endpointGuard: new ModelEndpointGuard(),
    });
    const error = await denied.complete(ask).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('FORBIDDEN');
    expect(server.requests.length).toBe(before);
  });

  it('when the endpoint is keyless and the environment holds an Anthropic key, no key is sent', async () => {
    const saved = process.env['ANTHROPIC_API_KEY'];
    process.env['ANTHROPIC_API_KEY'] = 'sk-ant-from-env';
    try {
      server.enqueue(recordedStream('anthropic-text.chunks.txt'));
      const before = server.requests.length;
      await new AnthropicMessagesModel({ baseUrl: server.baseUrl, endpointGuard: guard }).complete(ask);
      const headers = server.requests[before]?.headers ?? {};
      expect(JSON.stringify(headers)).not.toContain('sk-ant-from-env');
      expect(headers['authorization']).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env['ANTHROPIC_API_KEY'];
      else process.env['ANTHROPIC_API_KEY'] = saved;
    }
  });

  it('when the server accepts and never sends a byte, the attempt times out and the call fails LLM_UNAVAILABLE', async () => {
    server.enqueue({ fault: 'hang' });
    const hanging = new AnthropicMessagesModel({
      baseUrl: server.baseUrl,
      apiKey: KEY,
      endpointGuard: guard,
      maxRetries: 0,
      timeoutMs: 300,
    });
    const error = await hanging.complete(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as LlmUnavailableError).detail.reason).toMatch(/^timed out/);
  });

  it('when the task aborts mid-stream, the call ends CANCELLED', async () => {
    server.enqueue(recordedStream('anthropic-text.chunks.txt'));
    const controller = new AbortController();
    const error = await model()
      .complete(ask, { signal: controller.signal, onContentDelta: () => controller.abort() })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('CANCELLED');
  });
});

describe('Anthropic Messages adapter, stream: false (a recorded whole Message)', () => {
  it('when the model config says stream: false, messages.create is sent without streaming and the whole Message becomes the same turn: thinking kept signed, text, two tool calls in order, cache usage; text and reasoning go on as one delta each', async () => {
    server.enqueue(recordedWhole('anthropic-whole.json'));
    const before = server.requests.length;
    const content: string[] = [];
    const reasoning: string[] = [];
    const pieces: ToolCallPiece[] = [];
    const result = await new AnthropicMessagesModel({
      baseUrl: server.baseUrl,
      apiKey: KEY,
      endpointGuard: guard,
      stream: false,
    }).complete(ask, {
      onContentDelta: (d) => content.push(d),
      onReasoningDelta: (d) => reasoning.push(d),
      onToolCallDelta: (d) => pieces.push(d),
    });
    const sent = server.requests.slice(before);
    expect((sent[0]?.body as Record<string, unknown>)['stream']).toBe(false);
    expect(sent[0]?.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(reasoning).toEqual(['The user wants me to call checkSandboxErrors immediately.']);
    expect(content).toEqual(['Checking the sandbox and the weather.']);
    expect(result.message.content).toBe('Checking the sandbox and the weather.');
    expect(result.message.reasoning_content).toBe(reasoning[0]);
    expect(result.message.tool_calls).toEqual([
      {
        id: 'toolu_017R7ACrx7NF7sLDDtvdQ1u9',
        type: 'function',
        function: { name: 'checkSandboxErrors', arguments: '{}' },
      },
      {
        id: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY',
        type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' },
      },
    ]);
    expect(callsOfPieces(pieces)).toEqual([
      { id: 'toolu_017R7ACrx7NF7sLDDtvdQ1u9', name: 'checkSandboxErrors', arguments: '{}' },
      { id: 'toolu_01Ni1uw4HXYxUhc4iFMqx7yY', name: 'get_weather', arguments: '{"city":"Paris"}' },
    ]);
    const state = result.message.provider_state as { api: string; thinking: Record<string, string>[] };
    expect(state.thinking).toHaveLength(1);
    expect(state.thinking[0]?.['type']).toBe('thinking');
    expect(state.thinking[0]?.['signature']).toMatch(/^Eq4CCpIB/);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({
      prompt_tokens: 599 + 1024 + 3068,
      completion_tokens: 59,
      total_tokens: 599 + 1024 + 3068 + 59,
      cache_read_tokens: 1024,
      cache_write_tokens: 3068,
    });
    expect(result.responseId).toBe('msg_011CfWBu94HWxZXjXK6ZhEXM');
  });
});
