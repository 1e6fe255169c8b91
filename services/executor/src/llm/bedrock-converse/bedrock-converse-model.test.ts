// The Bedrock Converse adapter against recorded Converse streams replayed in their binary eventstream
// framing by a real loopback server (see src/__fixtures__/native/README.md for where each comes from).
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  bedrockError,
  bedrockModelStreamErrorFrame,
  bedrockStream,
  recordedBedrockStream,
  recordedEvents,
  recordedWhole,
} from '../../__fixtures__/native/recordings.js';
import { callCollecting } from '../../__fixtures__/native/adapter-call.js';
import type { ChatRequest } from '../chat-types.js';
import { LlmResponseError, LlmUnavailableError } from '../errors.js';
import { ModelEndpointGuard } from '../model-endpoint-guard.js';
import { BedrockConverseModel } from './bedrock-converse-model.js';

const ACCESS_KEY_ID = 'AKIACANARY7Q3Z';
const SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYcanary3c9e';
const SESSION_TOKEN = 'IQoJb3JpZ2luX2VjEcanarySessionToken';
const CREDENTIALS = JSON.stringify({
  access_key_id: ACCESS_KEY_ID,
  secret_access_key: SECRET,
  session_token: SESSION_TOKEN,
  region: 'eu-west-1',
});
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

function origin(): string {
  return server.baseUrl.replace(/\/v1$/, '');
}

function model(apiKey = CREDENTIALS): BedrockConverseModel {
  return new BedrockConverseModel({
    baseUrl: origin(),
    apiKey,
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
      name: 'test-tool',
      description: 'Test',
      parameters: { type: 'object', properties: { value: { type: 'string' } } },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'glob_search',
      description: 'Glob',
      parameters: { type: 'object', properties: { pattern: { type: 'string' } } },
    },
  },
];
const ask: ChatRequest = {
  model: 'anthropic.claude-sonnet-4-5-v1:0',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Hi' },
  ],
  tools,
};

const run = (request: ChatRequest = ask, bedrock = model()) => callCollecting(bedrock, request, server);

describe('Bedrock Converse adapter (recorded streams)', () => {
  it('when Bedrock streams text, each delta is handed on, the turn ends stop, usage is read, and the request is SigV4-signed with the vault keys only', async () => {
    server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const { result, content, sent } = await run();
    expect(content).toHaveLength(12);
    expect(content.join('')).toBe(
      'Let me count the "r"s in "strawberry":\n\ns-t-**r**-a-w-b-e-**r**-**r**-y\n\nThere are **3** r\'s in "strawberry."',
    );
    expect(result.message.content).toBe(content.join(''));
    expect(result.finishReason).toBe('stop');
    expect(result.usage).toEqual({ prompt_tokens: 22, completion_tokens: 55, total_tokens: 77 });
    expect(result.usageReported).toBeUndefined();
    const request = sent[0];
    expect(request?.path).toBe(
      `/model/${encodeURIComponent('anthropic.claude-sonnet-4-5-v1:0')}/converse-stream`,
    );
    const authorization = String(request?.headers['authorization']);
    expect(authorization).toMatch(
      new RegExp(
        `^AWS4-HMAC-SHA256 Credential=${ACCESS_KEY_ID}/\\d{8}/eu-west-1/bedrock/aws4_request, SignedHeaders=`,
      ),
    );
    expect(request?.headers['x-amz-security-token']).toBe(SESSION_TOKEN);
    // The secret signs; it is never sent.
    expect(JSON.stringify(request)).not.toContain(SECRET);
  });

  it('when the request is built, the system prompt and the tool list end in cache points, and the conversation has none before the loop starts', async () => {
    server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const { sent } = await run({ ...ask, max_tokens: 512, temperature: 0.2 });
    const body = sent[0]?.body as Record<string, unknown> & {
      toolConfig: { tools: Record<string, unknown>[] };
    };
    expect(body['system']).toEqual([{ text: 'You are terse.' }, { cachePoint: { type: 'default' } }]);
    expect(body.toolConfig.tools).toHaveLength(3);
    expect(body.toolConfig.tools[2]).toEqual({ cachePoint: { type: 'default' } });
    expect(body.toolConfig.tools[0]).toEqual({
      toolSpec: {
        name: 'test-tool',
        description: 'Test',
        inputSchema: { json: { type: 'object', properties: { value: { type: 'string' } } } },
      },
    });
    expect(body['messages']).toEqual([{ role: 'user', content: [{ text: 'Hi' }] }]);
    expect(body['inferenceConfig']).toEqual({ maxTokens: 512, temperature: 0.2 });
  });

  it('when two tool uses stream interleaved, each keeps its own arguments, their deltas are handed on by call index, finish tool_calls', async () => {
    server.enqueue(recordedBedrockStream('bedrock-two-tool-uses.chunks.txt'));
    const { result, toolCallDeltas } = await run();
    expect(result.finishReason).toBe('tool_calls');
    expect(result.message.tool_calls).toEqual([
      {
        id: 'tool-use-id',
        type: 'function',
        function: { name: 'test-tool', arguments: '{"value":"Sparkle Day"}' },
      },
      {
        id: 'functions.glob_search:0',
        type: 'function',
        function: { name: 'glob_search', arguments: '{"pattern": "**/*cursor*"}' },
      },
    ]);
    expect(toolCallDeltas).toEqual([
      { index: 0, id: 'tool-use-id', name: 'test-tool', arguments: '' },
      { index: 1, id: 'functions.glob_search:0', name: 'glob_search', arguments: '' },
      { index: 0, arguments: '{"value":' },
      { index: 1, arguments: '{"pattern": "**/*cursor*"}' },
      { index: 0, arguments: '"Sparkle Day"}' },
    ]);
  });

  it('when the model reasons, the reasoning streams and its signed block is kept; sent back, it leads the assistant turn with its signature, and the loop prefix gets a cache point', async () => {
    server.enqueue(recordedBedrockStream('bedrock-reasoning.chunks.txt'));
    const { result, reasoning, content } = await run({
      ...ask,
      thinking_budget_tokens: 2048,
      temperature: 0.5,
    });
    expect(reasoning.join('')).toMatch(/^Let me count the r's in "strawberry":.*So there are 3 r's\.$/s);
    expect(content.join('')).toMatch(/^There are \*\*3\*\* r's/);
    expect(result.message.reasoning_content).toBe(reasoning.join(''));
    const state = result.message.provider_state as unknown as {
      api: string;
      reasoning: { text: string; signature: string }[];
    };
    expect(state.api).toBe('bedrock-converse');
    expect(state.reasoning[0]?.signature).toMatch(/^Ep0CCkgICxABGAIq.*DaGAE=$/);

    server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'tool-1', type: 'function', function: { name: 'test-tool', arguments: '{"value":"x"}' } },
        ],
        provider_state: state,
      },
      { role: 'tool', tool_call_id: 'tool-1', content: 'done' },
    ];
    const { sent } = await run({
      ...ask,
      messages: conversation,
      thinking_budget_tokens: 2048,
      temperature: 0.5,
    });
    const body = sent[0]?.body as Record<string, unknown> & { messages: unknown[] };
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        {
          reasoningContent: {
            reasoningText: { text: state.reasoning[0]?.text, signature: state.reasoning[0]?.signature },
          },
        },
        { toolUse: { toolUseId: 'tool-1', name: 'test-tool', input: { value: 'x' } } },
      ],
    });
    expect(body.messages[2]).toEqual({
      role: 'user',
      content: [
        { toolResult: { toolUseId: 'tool-1', content: [{ text: 'done' }] } },
        { cachePoint: { type: 'default' } },
      ],
    });
    // Thinking on: the budget goes to the model, the temperature (refused with thinking) does not.
    expect(body['additionalModelRequestFields']).toEqual({
      thinking: { type: 'enabled', budget_tokens: 2048 },
    });
    expect(body['inferenceConfig']).toEqual({ maxTokens: 2048 + 4096 });
  });

  it('when the reasoning is redacted, its encrypted bytes are kept on the turn and go back unchanged before the tool use', async () => {
    server.enqueue(recordedBedrockStream('bedrock-redacted-reasoning.chunks.txt'));
    const { result, reasoning, toolCallDeltas } = await run();
    const recorded = (
      recordedEvents('bedrock-redacted-reasoning.chunks.txt')[1] as {
        contentBlockDelta: { delta: { reasoningContent: { redactedContent: string } } };
      }
    ).contentBlockDelta.delta.reasoningContent.redactedContent;
    expect(reasoning).toEqual([]);
    expect(result.message.tool_calls?.[0]?.function).toEqual({
      name: 'propose',
      arguments:
        '{"groups":[{"name":"Sales","parentGroupName":""},{"name":"Team1","parentGroupName":"Sales"}]}',
    });
    expect(toolCallDeltas).toHaveLength(1 + 26);
    expect(result.message.provider_state).toEqual({
      api: 'bedrock-converse',
      reasoning: [{ redacted: recorded }],
    });

    server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const conversation: ChatMessage[] = [
      ...ask.messages,
      result.message,
      { role: 'tool', tool_call_id: 'call_61f8fcbe423a58699163c53e076f1a06', content: 'ok' },
    ];
    const { sent } = await run({ ...ask, messages: conversation });
    const assistant = (sent[0]?.body as { messages: { content: Record<string, unknown>[] }[] }).messages[1];
    expect(assistant?.content[0]).toEqual({ reasoningContent: { redactedContent: recorded } });
    expect(Object.keys(assistant?.content[1] ?? {})).toEqual(['toolUse']);
  });

  it('when the prompt cache is read and written, usage counts both inside the prompt and names them', async () => {
    server.enqueue(recordedBedrockStream('bedrock-prompt-cache.chunks.txt'));
    const { result } = await run();
    expect(result.usage).toEqual({
      prompt_tokens: 22 + 1658 + 312,
      completion_tokens: 55,
      total_tokens: 2047,
      cache_read_tokens: 1658,
      cache_write_tokens: 312,
    });
  });

  it('when Bedrock throttles (429) with Retry-After and then without, the call waits the asked 2 s, then backs off, then succeeds', async () => {
    const throttled = (headers: Record<string, string> = {}) =>
      bedrockError(
        429,
        'ThrottlingException',
        'Too many requests, please wait before trying again.',
        headers,
      );
    server.enqueue(
      throttled({ 'retry-after': '2' }),
      throttled(),
      recordedBedrockStream('bedrock-text.chunks.txt'),
    );
    const { result, sent } = await run();
    expect(sent).toHaveLength(3);
    expect(result.attempts).toBe(3);
    expect(waits[0]).toBe(2000);
    expect(waits[1]).toBeLessThanOrEqual(1000);
  });

  it('when the stream reports modelStreamErrorException before any text, the attempt is retried', async () => {
    server.enqueue(
      bedrockStream([{ messageStart: { role: 'assistant' } }], [bedrockModelStreamErrorFrame()]),
      recordedBedrockStream('bedrock-text.chunks.txt'),
    );
    const { result, sent } = await run();
    expect(sent).toHaveLength(2);
    expect(result.message.content).toMatch(/^Let me count/);
  });

  it('when the stream breaks with modelStreamErrorException after text was handed on, the call fails LLM_UNAVAILABLE without a retry', async () => {
    const text = recordedEvents('bedrock-text.chunks.txt').slice(0, 4);
    server.enqueue(bedrockStream(text, [bedrockModelStreamErrorFrame()]));
    const before = server.requests.length;
    const error = await run().catch((e: unknown) => e);
    expect(server.requests.length - before).toBe(1);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as LlmUnavailableError).detail.reason).toMatch(
      /ModelStreamErrorException: Model Stream Error/,
    );
  });

  it('when ServiceUnavailable lasts past the retries, the call fails LLM_UNAVAILABLE naming 503', async () => {
    const unavailable = bedrockError(503, 'ServiceUnavailableException', 'Service unavailable');
    server.enqueue(unavailable, unavailable, unavailable);
    const error = await model()
      .complete(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as LlmUnavailableError).detail).toMatchObject({ status: 503, attempts: 3 });
  });

  it('when Bedrock refuses the request (400) quoting the key id and secret, the call fails at once as LLM_ERROR and nothing carries them', async () => {
    server.enqueue(bedrockError(400, 'ValidationException', `bad signature for ${ACCESS_KEY_ID} ${SECRET}`));
    const before = server.requests.length;
    const error = await model()
      .complete(ask)
      .catch((e: unknown) => e);
    expect(server.requests.length - before).toBe(1);
    expect(error).toBeInstanceOf(LlmResponseError);
    const text = JSON.stringify({ m: (error as Error).message, d: (error as LlmResponseError).detail });
    expect(text).toContain('ValidationException');
    expect(text).not.toContain(ACCESS_KEY_ID);
    expect(text).not.toContain(SECRET);
  });

  it('when the vault holds no AWS credentials, the call fails LLM_ERROR and nothing is sent', async () => {
    const before = server.requests.length;
    const error = await model('sk-not-aws')
      .complete(ask)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmResponseError);
    expect(server.requests.length).toBe(before);
  });

  it('when the environment holds a Bedrock bearer token and AWS keys, only the vault keys sign', async () => {
    const saved = { token: process.env['AWS_BEARER_TOKEN_BEDROCK'], key: process.env['AWS_ACCESS_KEY_ID'] };
    process.env['AWS_BEARER_TOKEN_BEDROCK'] = 'bedrock-api-key-from-env';
    process.env['AWS_ACCESS_KEY_ID'] = 'AKIAFROMENV';
    try {
      server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
      const { sent } = await run();
      const headers = JSON.stringify(sent[0]?.headers);
      expect(headers).not.toContain('bedrock-api-key-from-env');
      expect(headers).not.toContain('AKIAFROMENV');
      expect(headers).toContain(ACCESS_KEY_ID);
    } finally {
      for (const [name, value] of [
        ['AWS_BEARER_TOKEN_BEDROCK', saved.token],
        ['AWS_ACCESS_KEY_ID', saved.key],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('when the endpoint is a loopback address not allowed, nothing is sent', async () => {
    const before = server.requests.length;
    const denied = new BedrockConverseModel({
      baseUrl: origin(),
      apiKey: CREDENTIALS,
      endpointGuard: new ModelEndpointGuard(),
    });
    const error = await denied.complete(ask).catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('FORBIDDEN');
    expect(server.requests.length).toBe(before);
  });

  it('when the server accepts and never sends a byte, the attempt times out and the call fails LLM_UNAVAILABLE', async () => {
    server.enqueue({ fault: 'hang' });
    const hanging = new BedrockConverseModel({
      baseUrl: origin(),
      apiKey: CREDENTIALS,
      endpointGuard: guard,
      maxRetries: 0,
      timeoutMs: 300,
    });
    const error = await hanging.complete(ask).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect((error as LlmUnavailableError).detail.reason).toMatch(/^timed out/);
  });

  it('when the task aborts mid-stream, the call ends CANCELLED', async () => {
    server.enqueue(recordedBedrockStream('bedrock-text.chunks.txt'));
    const controller = new AbortController();
    const error = await model()
      .complete(ask, { signal: controller.signal, onContentDelta: () => controller.abort() })
      .catch((e: unknown) => e);
    expect((error as { code?: string }).code).toBe('CANCELLED');
  });
});

describe('Bedrock Converse adapter, stream: false (a recorded whole Converse answer)', () => {
  it('when the model config says stream: false, Converse (not converse-stream) is called and its message becomes the same turn: signed reasoning kept, text, two tool uses in order, cache reads and writes; one delta each', async () => {
    server.enqueue(recordedWhole('bedrock-whole.json'));
    const bedrock = new BedrockConverseModel({
      baseUrl: origin(),
      apiKey: CREDENTIALS,
      endpointGuard: guard,
      stream: false,
    });
    const { result, content, reasoning, toolCallDeltas, sent } = await run(ask, bedrock);
    expect(sent[0]?.path).toMatch(/\/converse$/);
    expect(sent[0]?.headers['authorization']).toMatch(/^AWS4-HMAC-SHA256 Credential=AKIACANARY7Q3Z\//);
    expect(reasoning).toEqual(['Two lookups, independent of each other: ask for both at once.']);
    expect(content).toEqual(["Sure! I'll look up both values simultaneously right away!"]);
    expect(result.message.tool_calls).toEqual([
      {
        id: 'tooluse_hr5juciYZJwUHpRczsw13R',
        type: 'function',
        function: { name: 'get_resistor_value', arguments: '{"ref":"R1"}' },
      },
      {
        id: 'tooluse_AZHw3Ym0S07qOv5NlXj9iJ',
        type: 'function',
        function: { name: 'get_capacitor_value', arguments: '{"ref":"C1"}' },
      },
    ]);
    expect(toolCallDeltas.map((d) => [d.index, d.id, d.arguments])).toEqual([
      [0, 'tooluse_hr5juciYZJwUHpRczsw13R', '{"ref":"R1"}'],
      [1, 'tooluse_AZHw3Ym0S07qOv5NlXj9iJ', '{"ref":"C1"}'],
    ]);
    const state = result.message.provider_state as unknown as { reasoning: Record<string, unknown>[] };
    expect(state.reasoning[0]?.['signature']).toMatch(/^Ep0CCkgI/);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.usage).toEqual({
      prompt_tokens: 694 + 1024 + 512,
      completion_tokens: 110,
      total_tokens: 694 + 1024 + 512 + 110,
      cache_read_tokens: 1024,
      cache_write_tokens: 512,
    });
  });
});
