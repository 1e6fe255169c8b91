// The Gemini adapter against recorded Gemini streams replayed by a real loopback server (see
// src/__fixtures__/native/README.md for where each recording comes from).
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { errorReply, recordedStream, recordedWhole } from '../../__fixtures__/native/recordings.js';
import { callCollecting, callsOfPieces, type ToolCallPiece } from '../../__fixtures__/native/adapter-call.js';
import type { ChatRequest } from '../chat-types.js';
import { LlmResponseError, LlmUnavailableError } from '../errors.js';
import { ModelEndpointGuard } from '../model-endpoint-guard.js';
import { GeminiModel } from './gemini-model.js';

const KEY = 'AIza-canary-5b2f';
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
  new GeminiModel({
    baseUrl: server.baseUrl.replace(/\/v1$/, '/v1beta'),
    apiKey: KEY,
    endpointGuard: guard,
    maxRetries: 2,
    sleep: async (ms) => {
      waits.push(ms);
    },
    random: () => 0.5,
  });

const weather = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};
const ask: ChatRequest = {
  model: 'gemini-3-pro-preview',
  messages: [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'How many r in strawberry?' },
  ],
  tools: [weather],
};

const run = (request: ChatRequest = ask) => callCollecting(model(), request, server);

describe('Gemini adapter (recorded streams)', () => {
  it('when Gemini streams text, each piece is handed on, usage counts thoughts as completion, and the closing signature is kept', async () => {
    server.enqueue(recordedStream('gemini-reasoning.chunks.txt'));
    const { result, content, sent } = await run();
    expect(content).toEqual([
      'There are **3** "r"s in',
      ' strawberry.\n\nHere is the breakdown: st**r**awbe**rr**y.',
    ]);
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({ prompt_tokens: 9, completion_tokens: 29 + 256, total_tokens: 294 });
    expect(result.message.provider_state).toMatchObject({
      api: 'gemini',
      signatures: { text: expect.stringMatching(/^Eo0HCooH/) },
    });
    expect(sent[0]?.path).toBe('/v1beta/models/gemini-3-pro-preview:streamGenerateContent');
    expect(sent[0]?.query).toMatchObject({ alt: 'sse' });
    expect(sent[0]?.headers['x-goog-api-key']).toBe(KEY);
    expect(sent[0]?.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'Be brief.' }] },
      contents: [{ role: 'user', parts: [{ text: 'How many r in strawberry?' }] }],
      generationConfig: { thinkingConfig: { includeThoughts: true } },
      tools: [{ functionDeclarations: [{ name: 'get_weather', description: 'Weather' }] }],
    });
  });

  it('when Gemini calls a function, it becomes a tool call (an id made for it) ending tool_calls, and its signature goes back on the call next turn', async () => {
    server.enqueue(recordedStream('gemini-tool-call.chunks.txt'));
    const { result } = await run();
    expect(result.finishReason).toBe('tool_calls');
    const call = result.message.tool_calls?.[0];
    expect(call?.function).toEqual({ name: 'weather', arguments: '{"location":"San Francisco"}' });
    expect(call?.id).toMatch(/^call_/);
    expect(result.usage).toEqual({ prompt_tokens: 29, completion_tokens: 15 + 804, total_tokens: 848 });

    server.enqueue(recordedStream('gemini-reasoning.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      { ...result.message, tool_calls: result.message.tool_calls ?? [] },
      { role: 'tool', tool_call_id: call?.id ?? '', content: '18°C' },
    ];
    const { sent } = await run({ ...ask, messages: conversation });
    const contents = (sent[0]?.body as { contents: unknown[] }).contents;
    expect(contents[1]).toEqual({
      role: 'model',
      parts: [
        {
          functionCall: { id: call?.id, name: 'weather', args: { location: 'San Francisco' } },
          thoughtSignature: expect.stringMatching(/^EpEgCo4g/),
        },
      ],
    });
    expect(contents[2]).toEqual({
      role: 'user',
      parts: [{ functionResponse: { id: call?.id, name: 'weather', response: { output: '18°C' } } }],
    });
  });

  it('when Gemini thinks and then calls two functions in one turn, the thought is reasoning, both calls keep their ids in order, and cached tokens are the cache reads', async () => {
    server.enqueue(recordedStream('gemini-thoughts-two-calls.chunks.txt'));
    const { result, reasoning, content, toolCallDeltas } = await run();
    expect(reasoning.join('')).toMatch(/^\*\*Checking two cities\*\*/);
    expect(content).toEqual([]);
    expect(result.message.tool_calls?.map((c) => [c.id, c.function.arguments])).toEqual([
      ['lpndqlku', '{"city":"Paris"}'],
      ['m6rogicj', '{"city":"Tokyo"}'],
    ]);
    expect(result.usage).toEqual({
      prompt_tokens: 1210,
      completion_tokens: 31 + 108,
      total_tokens: 1349,
      cache_read_tokens: 1024,
    });
    expect(result.message.provider_state).toEqual({
      api: 'gemini',
      signatures: { calls: ['AY89a19YsnFp7FOSIejJDV9XuMU996D+ZaDJiD6L9EEi+Lh+VGTEGqM3Lip3DPI7QzY=', null] },
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

  it('when a Gemini 3 turn with tool calls has no kept signature (a resumed task), its first call goes back with the documented validator-skip value', async () => {
    server.enqueue(recordedStream('gemini-reasoning.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
    ];
    const { sent } = await run({ ...ask, messages: conversation });
    const contents = (sent[0]?.body as { contents: { parts: Record<string, unknown>[] }[] }).contents;
    expect(contents[1]?.parts[0]?.['thoughtSignature']).toBe('skip_thought_signature_validator');
  });

  it('when Gemini answers 429 with RetryInfo and then 503, the call waits the 34.4 s asked, backs off, then succeeds', async () => {
    const quota = {
      error: {
        code: 429,
        message: 'You exceeded your current quota, please check your plan.',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [{ quotaId: 'GenerateRequestsPerMinutePerProjectPerModel-FreeTier' }],
          },
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '34.4s' },
        ],
      },
    };
    server.enqueue(
      errorReply(429, quota),
      errorReply(503, {
        error: {
          code: 503,
          message: 'The model is overloaded. Please try again later.',
          status: 'UNAVAILABLE',
        },
      }),
      recordedStream('gemini-reasoning.chunks.txt'),
    );
    const { result, sent } = await run();
    expect(sent).toHaveLength(3);
    expect(result.attempts).toBe(3);
    expect(waits).toEqual([34_400, 500]);
  });

  it('when 503 outlasts the retries the call fails LLM_UNAVAILABLE; a 400 quoting the key fails at once without it', async () => {
    const busy = errorReply(503, { error: { code: 503, message: 'overloaded', status: 'UNAVAILABLE' } });
    server.enqueue(busy, busy, busy);
    expect(
      await model()
        .complete(ask)
        .catch((e: unknown) => e),
    ).toBeInstanceOf(LlmUnavailableError);
    server.enqueue(
      errorReply(400, {
        error: { code: 400, message: `API key not valid: ${KEY}`, status: 'INVALID_ARGUMENT' },
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

describe('Gemini adapter, stream: false (a recorded whole response)', () => {
  it('when the model config says stream: false, generateContent is called and its response becomes the same turn: thought as reasoning, text, two calls with the first with its signature, cached tokens; one delta each', async () => {
    server.enqueue(recordedWhole('gemini-whole.json'));
    const before = server.requests.length;
    const content: string[] = [];
    const reasoning: string[] = [];
    const pieces: ToolCallPiece[] = [];
    const result = await new GeminiModel({
      baseUrl: server.baseUrl.replace(/\/v1$/, '/v1beta'),
      apiKey: KEY,
      endpointGuard: guard,
      stream: false,
    }).complete(ask, {
      onContentDelta: (d) => content.push(d),
      onReasoningDelta: (d) => reasoning.push(d),
      onToolCallDelta: (d) => pieces.push(d),
    });
    const sent = server.requests.slice(before);
    expect(sent[0]?.path).toMatch(/:generateContent$/);
    expect(sent[0]?.path).not.toContain('stream');
    expect(reasoning).toHaveLength(1);
    expect(reasoning[0]).toMatch(/^\*\*Checking two cities\*\*/);
    expect(content).toEqual(['Looking up both cities.']);
    expect(result.message.tool_calls?.map((c) => [c.id, c.function.arguments])).toEqual([
      ['lpndqlku', '{"city":"Paris"}'],
      ['m6rogicj', '{"city":"Tokyo"}'],
    ]);
    expect(callsOfPieces(pieces).map((c) => c.id)).toEqual(['lpndqlku', 'm6rogicj']);
    const state = result.message.provider_state as unknown as { signatures: { calls: (string | null)[] } };
    expect(state.signatures.calls).toEqual([expect.stringMatching(/^AY89a19/), null]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({
      prompt_tokens: 1210,
      completion_tokens: 31 + 108,
      total_tokens: 1349,
      cache_read_tokens: 1024,
    });
  });
});
