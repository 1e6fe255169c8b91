// The OpenAI Responses adapter against recorded Responses streams replayed by a real loopback server
// (see src/__fixtures__/native/README.md for where each recording comes from).
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorReply, recordedStream, recordedWhole } from '../../__fixtures__/native/recordings.js';
import { callCollecting, callsOfPieces, type ToolCallPiece } from '../../__fixtures__/native/adapter-call.js';
import type { ChatRequest } from '../chat-types.js';
import { LlmResponseError, LlmUnavailableError } from '../errors.js';
import { ModelEndpointGuard } from '../model-endpoint-guard.js';
import { OpenAiResponsesModel } from './openai-responses-model.js';

const KEY = 'sk-proj-canary-91d0';
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

const model = () =>
  new OpenAiResponsesModel({
    baseUrl: server.baseUrl,
    apiKey: KEY,
    endpointGuard: guard,
    maxRetries: 2,
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
  });

const calculator = {
  type: 'function' as const,
  function: {
    name: 'calculator',
    description: 'Arithmetic',
    parameters: { type: 'object', properties: { a: { type: 'number' } } },
  },
};
const ask: ChatRequest = {
  model: 'gpt-5.1-codex-max',
  messages: [
    { role: 'system', content: 'Use the calculator.' },
    { role: 'user', content: 'What is (12+7)*3*10?' },
  ],
  tools: [calculator],
  max_tokens: 500,
};

const run = (request: ChatRequest = ask) => callCollecting(model(), request, server);

describe('OpenAI Responses adapter (recorded streams)', () => {
  it('when the model streams text, each delta is handed on and usage is read; the request is stateless and asks for encrypted reasoning', async () => {
    server.enqueue(recordedStream('openai-responses-text.chunks.txt'));
    const { result, content, sent } = await run();
    expect(content).toEqual(['The', ' final', ' result', ' is', ' **', '570', '**', '.']);
    expect(result.message.content).toBe('The final result is **570**.');
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({ prompt_tokens: 299, completion_tokens: 12, total_tokens: 311 });
    expect(sent[0]?.path).toBe('/v1/responses');
    expect(sent[0]?.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(sent[0]?.body).toMatchObject({
      model: 'gpt-5.1-codex-max',
      stream: true,
      store: false,
      include: ['reasoning.encrypted_content'],
      max_output_tokens: 500,
      input: [
        { role: 'system', content: 'Use the calculator.' },
        { role: 'user', content: 'What is (12+7)*3*10?' },
      ],
      tools: [{ type: 'function', name: 'calculator', description: 'Arithmetic', strict: false }],
    });
  });

  it('when the model reasons and calls a tool, the summary streams as reasoning, the call is whole, and the encrypted reasoning item goes back before the call next turn', async () => {
    server.enqueue(recordedStream('openai-responses-reasoning-tool.chunks.txt'));
    const { result, reasoning } = await run();
    expect(reasoning.join('')).toBe("**Calculating step-by-step using calculator**\n\nI'll");
    expect(result.finishReason).toBe('tool_calls');
    expect(result.message.tool_calls).toEqual([
      {
        id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
        type: 'function',
        function: { name: 'calculator', arguments: '{"a":12,"b":7,"op":"add"}' },
      },
    ]);
    const state = result.message.provider_state as unknown as { reasoning: Record<string, unknown>[] };
    expect(state.reasoning[0]).toMatchObject({
      type: 'reasoning',
      id: 'rs_01830d662ab3856501693c321405c88190be3ab04d5782d5f9',
    });
    expect(String(state.reasoning[0]?.['encrypted_content'])).toMatch(/^gAAAAABpPDIVOKrs.*uQ==$/);

    server.enqueue(recordedStream('openai-responses-text.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      { ...result.message, tool_calls: result.message.tool_calls ?? [] },
      { role: 'tool', tool_call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn', content: '19' },
    ];
    const { sent } = await run({ ...ask, messages: conversation });
    const input = (sent[0]?.body as { input: Record<string, unknown>[] }).input;
    expect(input.slice(2).map((item) => item['type'])).toEqual([
      'reasoning',
      'function_call',
      'function_call_output',
    ]);
    expect(input[2]).toMatchObject({
      id: state.reasoning[0]?.['id'],
      encrypted_content: state.reasoning[0]?.['encrypted_content'],
    });
    expect(input[3]).toEqual({
      type: 'function_call',
      call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
      name: 'calculator',
      arguments: '{"a":12,"b":7,"op":"add"}',
    });
    expect(input[4]).toEqual({
      type: 'function_call_output',
      call_id: 'call_AB6AaRZ1FYZB2RwS6A5vbdqn',
      output: '19',
    });
  });

  it('when two calls come in one turn, both are tool calls in output order, and cached input tokens are the cache reads', async () => {
    server.enqueue(recordedStream('openai-responses-two-calls.chunks.txt'));
    const { result, toolCallDeltas } = await run();
    expect(result.message.tool_calls?.map((c) => [c.id, c.function.arguments])).toEqual([
      ['call_Q6pW65MUgW9vF59BmItYGos3', '{"a":19,"b":3,"op":"multiply"}'],
      ['call_Zl5vIMnD7dVAjgU6FkhmiCZh', '{"a":57,"b":10,"op":"multiply"}'],
    ]);
    expect(result.usage).toEqual({
      prompt_tokens: 2006,
      completion_tokens: 52,
      total_tokens: 2058,
      cache_read_tokens: 1920,
    });
    // Streamed pieces add up to each call, id and name on its first piece.
    expect(callsOfPieces(toolCallDeltas)).toEqual(
      (result.message.tool_calls ?? []).map((call) => ({
        id: call.id,
        name: call.function.name,
        arguments: call.function.arguments,
      })),
    );
  });

  it('when OpenAI answers 429 with retry-after-ms and then 500 without a hint, the call waits as asked, backs off, then succeeds', async () => {
    const limit = {
      error: {
        message: 'Rate limit reached for gpt-5.1 in organization org-x on tokens per min',
        type: 'tokens',
        param: null,
        code: 'rate_limit_exceeded',
      },
    };
    server.enqueue(
      errorReply(429, limit, { 'retry-after-ms': '1500' }),
      errorReply(500, {
        error: {
          message: 'The server had an error while processing your request.',
          type: 'server_error',
          param: null,
          code: null,
        },
      }),
      recordedStream('openai-responses-text.chunks.txt'),
    );
    const { result, sent } = await run();
    expect(sent).toHaveLength(3);
    expect(result.attempts).toBe(3);
    expect(waits).toEqual([1500, 500]);
  });

  it('when 429s outlast the retries, the call fails LLM_UNAVAILABLE; a 401 quoting the key fails at once without it', async () => {
    const limit = errorReply(429, {
      error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' },
    });
    server.enqueue(limit, limit, limit);
    expect(
      await model()
        .complete(ask)
        .catch((e: unknown) => e),
    ).toBeInstanceOf(LlmUnavailableError);

    server.enqueue(
      errorReply(401, {
        error: {
          message: `Incorrect API key provided: ${KEY}`,
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        },
      }),
    );
    const error = await model()
      .complete(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmResponseError);
    expect(
      JSON.stringify({ m: (error as Error).message, d: (error as LlmResponseError).detail }),
    ).not.toContain(KEY);
  });
});

describe('OpenAI Responses adapter, stream: false (a recorded whole Response)', () => {
  it('when the model config says stream: false, responses.create is sent with stream false and the whole Response becomes the same turn: reasoning item kept, text, two calls in order, cached tokens; one delta each', async () => {
    server.enqueue(recordedWhole('openai-responses-whole.json'));
    const before = server.requests.length;
    const content: string[] = [];
    const reasoning: string[] = [];
    const pieces: ToolCallPiece[] = [];
    const result = await new OpenAiResponsesModel({
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
    expect(reasoning).toHaveLength(1);
    expect(reasoning[0]).toMatch(/^\*\*Reporting final result\*\*/);
    expect(content).toEqual(['12 + 7 = 19\n19 × 3 = 57\n57 × 10 = 570\n\nFinal result: 570']);
    expect(result.message.tool_calls).toEqual([
      {
        id: 'call_Q6pW65MUgW9vF59BmItYGos3',
        type: 'function',
        function: { name: 'calculator', arguments: '{"a":19,"b":3,"op":"multiply"}' },
      },
      {
        id: 'call_Zl5vIMnD7dVAjgU6FkhmiCZh',
        type: 'function',
        function: { name: 'calculator', arguments: '{"a":57,"b":10,"op":"multiply"}' },
      },
    ]);
    expect(callsOfPieces(pieces).map((c) => c.id)).toEqual([
      'call_Q6pW65MUgW9vF59BmItYGos3',
      'call_Zl5vIMnD7dVAjgU6FkhmiCZh',
    ]);
    const state = result.message.provider_state as unknown as { reasoning: Record<string, unknown>[] };
    expect(state.reasoning[0]?.['encrypted_content']).toMatch(/^gAAAAABp/);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({
      prompt_tokens: 2006,
      completion_tokens: 163,
      total_tokens: 2169,
      cache_read_tokens: 1920,
    });
  });
});
