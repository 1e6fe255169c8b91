// The model client against real HTTP servers on 127.0.0.1: the test kit's scripted OpenAI-compatible
// model (streaming, faults) and, for answers that model never gives, its recording API.
import { inspect } from 'node:util';
import { setTimeout as realSleep } from 'node:timers/promises';
import {
  findFreePort,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordedModelRequest,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { Agent } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  LlmAbortedError,
  LlmResponseError,
  LlmUnavailableError,
  OpenAiChatClient,
  type ChatRequest,
  type OpenAiChatClientOptions,
} from './index.js';

const CANARY_KEY = 'sk-canary-3f9d2c7a1b8e4d60';

const ask: ChatRequest = {
  model: 'gpt-scripted',
  messages: [{ role: 'user', content: 'What is the weather in Paris and Berlin?' }],
};

let model: ScriptedModel;

beforeAll(async () => {
  // The model refuses requests without `Authorization: Bearer <canary>`, so every passing call proves the header.
  model = await startScriptedModel({ apiKey: CANARY_KEY });
});

afterEach(() => {
  expect(model.pendingSteps()).toBe(0);
});

afterAll(async () => {
  await model?.stop();
});

/** A client whose waits between attempts are recorded and skipped (yet still abortable). */
function clientFor(overrides: Partial<OpenAiChatClientOptions> = {}) {
  const sleeps: number[] = [];
  const client = new OpenAiChatClient({
    baseUrl: model.baseUrl,
    apiKey: CANARY_KEY,
    maxRetries: 3,
    backoff: { initialMs: 100, maxMs: 1_000, multiplier: 2 },
    random: () => 0.5,
    sleep: async (ms, signal) => {
      sleeps.push(ms);
      signal?.throwIfAborted();
    },
    ...overrides,
  });
  return { client, sleeps };
}

/** The requests the model receives from now on. */
function requestsFromNow(): () => RecordedModelRequest[] {
  const start = model.requests.length;
  return () => model.requests.slice(start);
}

async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (error: unknown) => error,
  );
}

/** Everything an error shows anywhere: message, detail, cause chain, own properties. */
function expectNoSecretIn(error: unknown): void {
  expect(inspect(error, { depth: 20, showHidden: true })).not.toContain(CANARY_KEY);
  expect(JSON.stringify((error as { detail?: unknown }).detail ?? null)).not.toContain(CANARY_KEY);
}

describe('OpenAI chat client against the scripted model', () => {
  it('when the model streams text, the deltas arrive in order and the result holds the whole message, the completion id and the answering model', async () => {
    const { client } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({
      content: 'Paris is sunny; Berlin is grey.',
      chunkSize: 5,
      usage: { prompt_tokens: 12, completion_tokens: 7 },
    });
    const deltas: string[] = [];

    const result = await client.complete(
      {
        ...ask,
        temperature: 0.2,
        tools: [
          {
            type: 'function',
            function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object' } },
          },
        ],
      },
      { onContentDelta: (delta) => deltas.push(delta) },
    );

    expect(deltas).toEqual(['Paris', ' is s', 'unny;', ' Berl', 'in is', ' grey', '.']);
    expect(result).toEqual({
      message: { role: 'assistant', content: 'Paris is sunny; Berlin is grey.' },
      finishReason: 'stop',
      usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
      responseId: expect.stringMatching(/^chatcmpl-scripted-\d+$/),
      responseModel: 'gpt-scripted',
      attempts: 1,
    });
    const [request] = sent();
    expect(request?.headers['authorization']).toBe(`Bearer ${CANARY_KEY}`);
    expect(request?.body).toEqual({
      model: 'gpt-scripted',
      messages: ask.messages,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', description: 'Weather now', parameters: { type: 'object' } },
        },
      ],
    });
  });

  it('when the model reasons before answering, reasoning deltas come first and land in reasoning_content', async () => {
    const { client } = clientFor();
    model.enqueue({ reasoning: 'The user wants weather.', content: 'Sunny.', chunkSize: 6 });
    const seen: string[] = [];

    const result = await client.complete(ask, {
      onReasoningDelta: (delta) => seen.push(`reasoning:${delta}`),
      onContentDelta: (delta) => seen.push(`content:${delta}`),
    });

    expect(seen).toEqual([
      'reasoning:The us',
      'reasoning:er wan',
      'reasoning:ts wea',
      'reasoning:ther.',
      'content:Sunny.',
    ]);
    expect(result.message).toEqual({
      role: 'assistant',
      content: 'Sunny.',
      reasoning_content: 'The user wants weather.',
    });
  });

  it('when the model calls two tools in parallel, both calls are assembled from their pieces in call order', async () => {
    const { client } = clientFor();
    model.enqueue({
      toolCalls: [
        { id: 'call_paris', name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' } },
        { id: 'call_berlin', name: 'get_weather', arguments: { city: 'Berlin', unit: 'celsius' } },
      ],
      chunkSize: 3,
    });
    const deltas: string[] = [];

    const result = await client.complete(ask, { onContentDelta: (delta) => deltas.push(delta) });

    expect(deltas).toEqual([]);
    expect(result.finishReason).toBe('tool_calls');
    expect(result.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          id: 'call_paris',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
        },
        {
          id: 'call_berlin',
          type: 'function',
          function: { name: 'get_weather', arguments: '{"city":"Berlin","unit":"celsius"}' },
        },
      ],
    });
    expect(result.usage.total_tokens).toBeGreaterThan(0);
  });

  it('when the model is rate limited with Retry-After, the client waits that long, retries and gets the answer', async () => {
    const { client, sleeps } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({ fault: 'rate_limit', retryAfterSeconds: 7 }, { content: 'after the wait' });

    const result = await client.complete(ask);

    expect(result.message.content).toBe('after the wait');
    expect(result.attempts).toBe(2);
    expect(sent().map((r) => r.outcome)).toEqual(['rate_limit', 'reply']);
    expect(sleeps).toEqual([7_000]);
  });

  it('when Retry-After asks for longer than the configured maximum, the wait is cut to the maximum', async () => {
    const { client, sleeps } = clientFor({ maxRetryAfterMs: 2_000 });
    model.enqueue({ fault: 'rate_limit', retryAfterSeconds: 3_600 }, { content: 'ok' });

    await client.complete(ask);

    expect(sleeps).toEqual([2_000]);
  });

  it('when the model answers 500 every time, the call fails LLM_UNAVAILABLE after maxRetries + 1 attempts with jittered waits', async () => {
    const { client, sleeps } = clientFor({ maxRetries: 2 });
    const sent = requestsFromNow();
    const melted = { fault: 'server_error', message: 'upstream melted' } as const;
    model.enqueue(melted, melted, melted);

    const error = await failureOf(client.complete(ask));

    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(error).toMatchObject({
      code: 'LLM_UNAVAILABLE',
      retryable: true,
      attempts: 3,
      detail: { status: 500, attempts: 3, body: expect.stringContaining('upstream melted') },
    });
    expect((error as Error).message).toContain('upstream melted');
    expect(sent()).toHaveLength(3);
    // Full jitter with the draw fixed at 0.5: half of the bounds 100 and 200.
    expect(sleeps).toEqual([50, 100]);
    expectNoSecretIn(error);
  });

  it('when the connection drops before any delta, the call is retried and succeeds', async () => {
    const { client, sleeps } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({ fault: 'drop_connection' }, { content: 'recovered' });

    const result = await client.complete(ask);

    expect(result.message.content).toBe('recovered');
    expect(result.attempts).toBe(2);
    expect(sent().map((r) => r.outcome)).toEqual(['drop_connection', 'reply']);
    expect(sleeps).toHaveLength(1);
  });

  it('when the connection drops after text was handed on, the call fails LLM_UNAVAILABLE without a retry', async () => {
    const { client, sleeps } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({
      fault: 'drop_connection',
      partial: { content: 'Partial answer that never ends' },
      afterChunks: 3,
    });
    const deltas: string[] = [];

    const error = await failureOf(client.complete(ask, { onContentDelta: (delta) => deltas.push(delta) }));

    expect(deltas.join('')).toBe('Partial ');
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(error).toMatchObject({ retryable: true, attempts: 1 });
    expect((error as LlmUnavailableError).detail.reason).toContain('the stream broke mid-response');
    expect(sent()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('when a stream goes quiet past the idle timeout before any text, the call is retried', async () => {
    const { client } = clientFor({ idleTimeoutMs: 200 });
    const sent = requestsFromNow();
    model.enqueue(
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], chunkDelayMs: 30_000 },
      { content: 'second try' },
    );

    const result = await client.complete(ask);

    expect(result.message.content).toBe('second try');
    expect(result.message.tool_calls).toBeUndefined();
    expect(sent()).toHaveLength(2);
  });

  it('when the stream carries malformed JSON, the call fails LLM_ERROR without a retry', async () => {
    const { client } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({ fault: 'malformed_json' });

    const error = await failureOf(client.complete(ask));

    expect(error).toBeInstanceOf(LlmResponseError);
    expect(error).toMatchObject({
      code: 'LLM_ERROR',
      retryable: false,
      detail: { reason: 'a stream chunk is not valid JSON', body: expect.stringContaining('"choices"') },
    });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect(sent()).toHaveLength(1);
  });

  it('when the model hangs past the timeout on every attempt, the call fails LLM_UNAVAILABLE after retrying', async () => {
    const { client } = clientFor({ timeoutMs: 300, maxRetries: 1 });
    const sent = requestsFromNow();
    model.enqueue({ fault: 'hang' }, { fault: 'hang' });

    const error = await failureOf(client.complete(ask));

    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(error).toMatchObject({ attempts: 2 });
    expect((error as LlmUnavailableError).detail.reason).toContain('timed out');
    expect(sent().map((r) => r.outcome)).toEqual(['hang', 'hang']);
  });

  it('when the model answers 400, the call fails LLM_ERROR at once with the upstream message', async () => {
    const { client, sleeps } = clientFor();
    const sent = requestsFromNow();
    model.enqueue({
      fault: 'server_error',
      status: 400,
      message: "Invalid schema for function 'get_weather'",
    });

    const error = await failureOf(client.complete(ask));

    expect(error).toBeInstanceOf(LlmResponseError);
    expect(error).toMatchObject({
      code: 'LLM_ERROR',
      retryable: false,
      detail: { status: 400, attempts: 1 },
    });
    expect((error as Error).message).toContain("HTTP 400: Invalid schema for function 'get_weather'");
    expect(sent()).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('when an upstream error quotes the API key, neither message nor detail nor cause carries it', async () => {
    const { client } = clientFor({ maxRetries: 0 });
    model.enqueue(
      { fault: 'server_error', status: 401, message: `Incorrect API key provided: ${CANARY_KEY}` },
      { fault: 'server_error', status: 503, message: `overloaded for key ${CANARY_KEY}` },
    );

    const refused = await failureOf(client.complete(ask));
    const overloaded = await failureOf(client.complete(ask));

    expect(refused).toBeInstanceOf(LlmResponseError);
    expect((refused as LlmResponseError).detail.body).toContain('Incorrect API key provided: [redacted]');
    expect(overloaded).toBeInstanceOf(LlmUnavailableError);
    expect((overloaded as Error).message).toContain('overloaded for key [redacted]');
    expectNoSecretIn(refused);
    expectNoSecretIn(overloaded);
  });

  it('when the caller aborts during a stream the model holds open, the call stops at once with LlmAbortedError and the connection closes', async () => {
    const agent = new Agent();
    let disconnected = false;
    agent.on('disconnect', () => {
      disconnected = true;
    });
    const { client } = clientFor({ dispatcher: agent });
    // The role chunk and two pieces of text are sent, then the model holds the stream open until the call
    // has returned: it can only return because the abort stopped it (no clock is read).
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => (release = resolve));
    model.enqueue({ content: 'x'.repeat(400), chunkSize: 4, hold: { afterChunks: 3, until: released } });
    const controller = new AbortController();
    const reason = new Error('task cancelled by the user');
    const deltas: string[] = [];

    const error = await failureOf(
      client.complete(ask, {
        signal: controller.signal,
        onContentDelta: (delta) => {
          deltas.push(delta);
          if (deltas.length === 2) controller.abort(reason);
        },
      }),
    );
    release();

    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(error).toMatchObject({ code: 'CANCELLED', retryable: false, reason, attempts: 1 });
    expect(deltas).toHaveLength(2);
    await waitFor(() => disconnected, { timeoutMs: 5_000, description: 'the model connection to close' });
    await agent.close();
  });

  it('when the caller aborts with a timeout reason (a task deadline), the error says DEADLINE_EXCEEDED', async () => {
    const { client } = clientFor();
    model.enqueue({ fault: 'hang' });

    const error = await failureOf(client.complete(ask, { signal: AbortSignal.timeout(200) }));

    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', retryable: false });
    expect((error as LlmAbortedError).reason).toMatchObject({ name: 'TimeoutError' });
  });

  it('when the caller aborts while the client waits to retry, the wait ends and nothing more is sent', async () => {
    let sleeping!: () => void;
    const waiting = new Promise<void>((resolve) => (sleeping = resolve));
    const { client } = clientFor({
      backoff: { initialMs: 60_000, maxMs: 60_000, multiplier: 2 },
      sleep: (ms, signal) => {
        sleeping();
        return realSleep(ms, undefined, { signal });
      },
    });
    const sent = requestsFromNow();
    model.enqueue({ fault: 'server_error' });
    const controller = new AbortController();

    const outcome = failureOf(client.complete(ask, { signal: controller.signal }));
    await waiting;
    controller.abort();
    const error = await outcome;

    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(error).toMatchObject({ code: 'CANCELLED', attempts: 1 });
    expect(sent()).toHaveLength(1);
  });

  it('when the signal is already aborted, nothing is sent', async () => {
    const { client } = clientFor();
    const sent = requestsFromNow();

    const error = await failureOf(client.complete(ask, { signal: AbortSignal.abort() }));

    expect(error).toBeInstanceOf(LlmAbortedError);
    expect(error).toMatchObject({ attempts: 0 });
    expect(sent()).toHaveLength(0);
  });
});

describe('OpenAI chat client against other servers', () => {
  it('when nothing listens at the base URL, the call fails LLM_UNAVAILABLE after retrying the connection', async () => {
    const port = await findFreePort();
    const { client, sleeps } = clientFor({ baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 1 });

    const error = await failureOf(client.complete(ask));

    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(error).toMatchObject({ attempts: 2 });
    expect((error as LlmUnavailableError).detail.reason).toContain('ECONNREFUSED');
    expect(sleeps).toHaveLength(1);
  });

  it('when a server ignores stream and answers one JSON completion, the text is handed on once and the result is whole', async () => {
    const api = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/v1/chat/completions',
          reply: {
            body: {
              object: 'chat.completion',
              choices: [
                {
                  index: 0,
                  message: {
                    role: 'assistant',
                    content: 'Checking.',
                    tool_calls: [
                      { id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
                    ],
                  },
                  finish_reason: 'tool_calls',
                },
              ],
              usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
            },
          },
        },
      ],
    });
    try {
      const { client } = clientFor({ baseUrl: `${api.url}/v1/` });
      const deltas: string[] = [];

      const result = await client.complete(ask, { onContentDelta: (delta) => deltas.push(delta) });

      expect(deltas).toEqual(['Checking.']);
      expect(result).toEqual({
        message: {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [
            { id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          ],
        },
        finishReason: 'tool_calls',
        usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
        attempts: 1,
      });
    } finally {
      await api.stop();
    }
  });

  it('when the model config says stream: false, the request asks for no stream and one whole chat.completion gives the turn: reasoning, text, two tool calls in order, cached usage; one delta each', async () => {
    // OpenAI's API reference (chat/create, function calling example) with DeepSeek's `reasoning_content`
    // (api-docs.deepseek.com, reasoning model) and `prompt_tokens_details.cached_tokens` (prompt caching guide).
    const api = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/v1/chat/completions',
          reply: {
            body: {
              id: 'chatcmpl-abc123',
              object: 'chat.completion',
              created: 1699896916,
              model: 'gpt-4o-mini',
              choices: [
                {
                  index: 0,
                  message: {
                    role: 'assistant',
                    reasoning_content: 'Two cities: ask for both.',
                    content: 'Checking both.',
                    tool_calls: [
                      {
                        id: 'call_abc123',
                        type: 'function',
                        function: { name: 'get_current_weather', arguments: '{"location":"Boston, MA"}' },
                      },
                      {
                        id: 'call_def456',
                        type: 'function',
                        function: { name: 'get_current_weather', arguments: '{"location":"Paris"}' },
                      },
                    ],
                  },
                  logprobs: null,
                  finish_reason: 'tool_calls',
                },
              ],
              usage: {
                prompt_tokens: 2006,
                completion_tokens: 300,
                total_tokens: 2306,
                prompt_tokens_details: { cached_tokens: 1920 },
              },
            },
          },
        },
      ],
    });
    try {
      const { client } = clientFor({ baseUrl: `${api.url}/v1/`, stream: false });
      const content: string[] = [];
      const reasoning: string[] = [];
      const calls: string[] = [];

      const result = await client.complete(ask, {
        onContentDelta: (delta) => content.push(delta),
        onReasoningDelta: (delta) => reasoning.push(delta),
        onToolCallDelta: (delta) => calls.push(`${delta.index}:${delta.id}:${delta.arguments}`),
      });

      const sent = api.requests[0]?.body as Record<string, unknown>;
      expect(sent['stream']).toBe(false);
      expect(sent['stream_options']).toBeUndefined();
      expect(api.requests[0]?.headers['accept']).toBe('application/json');
      expect(reasoning).toEqual(['Two cities: ask for both.']);
      expect(content).toEqual(['Checking both.']);
      expect(calls).toEqual([
        '0:call_abc123:{"location":"Boston, MA"}',
        '1:call_def456:{"location":"Paris"}',
      ]);
      expect(result.message.tool_calls?.map((call) => call.id)).toEqual(['call_abc123', 'call_def456']);
      expect(result.message.reasoning_content).toBe('Two cities: ask for both.');
      expect(result.finishReason).toBe('tool_calls');
      expect(result.usage).toEqual({
        prompt_tokens: 2006,
        completion_tokens: 300,
        total_tokens: 2306,
        cache_read_tokens: 1920,
      });
    } finally {
      await api.stop();
    }
  });

  it('when a stream uses CRLF, keep-alive comments and `reasoning` deltas, it reads like any other', async () => {
    const events = [
      { choices: [{ index: 0, delta: { role: 'assistant', reasoning: 'Hmm.' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }] },
      { choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
    ];
    const body = `: keep-alive\r\n\r\n${events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join(': ping\r\n')}data: [DONE]\r\n\r\n`;
    const api = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/v1/chat/completions',
          reply: { headers: { 'content-type': 'text/event-stream' }, body },
        },
      ],
    });
    try {
      const { client } = clientFor({ baseUrl: `${api.url}/v1` });
      const reasoning: string[] = [];

      const result = await client.complete(ask, { onReasoningDelta: (delta) => reasoning.push(delta) });

      expect(reasoning).toEqual(['Hmm.']);
      expect(result).toMatchObject({
        message: { role: 'assistant', content: 'Hi', reasoning_content: 'Hmm.' },
        finishReason: 'stop',
        // The server sent no usage: the client's estimate, marked as such.
        usageReported: false,
      });
      expect(result.usage.completion_tokens).toBe(Math.ceil('HiHmm.'.length / 4));
      expect(result.usage.prompt_tokens).toBeGreaterThan(0);
    } finally {
      await api.stop();
    }
  });

  it('when a 429 gives Retry-After as an HTTP date, the wait runs until that date by the injected clock', async () => {
    const now = Date.parse('2026-03-01T12:00:00Z');
    let calls = 0;
    const api = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/v1/chat/completions',
          reply: () =>
            (calls += 1) === 1
              ? {
                  status: 429,
                  headers: { 'retry-after': new Date(now + 12_000).toUTCString() },
                  body: { error: { message: 'slow down' } },
                }
              : {
                  body: {
                    choices: [
                      { index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' },
                    ],
                  },
                },
        },
      ],
    });
    try {
      const { client, sleeps } = clientFor({ baseUrl: `${api.url}/v1`, now: () => now });

      const result = await client.complete(ask);

      expect(result).toMatchObject({ message: { content: 'ok' }, attempts: 2 });
      expect(sleeps).toEqual([12_000]);
      expect(api.requests).toHaveLength(2);
    } finally {
      await api.stop();
    }
  });

  it('when a server answers with no choices, the call fails LLM_ERROR', async () => {
    const api = await startRecordingApi({
      routes: [
        { method: 'POST', path: '/v1/chat/completions', reply: { body: { object: 'chat.completion' } } },
      ],
    });
    try {
      const { client } = clientFor({ baseUrl: `${api.url}/v1` });

      const error = await failureOf(client.complete(ask));

      expect(error).toBeInstanceOf(LlmResponseError);
      expect((error as LlmResponseError).detail).toMatchObject({
        reason: 'the answer has no choices',
        status: 200,
      });
      expect(api.requests).toHaveLength(1);
    } finally {
      await api.stop();
    }
  });
});
