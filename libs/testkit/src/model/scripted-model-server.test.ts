import OpenAI, {
  APIConnectionError,
  APIConnectionTimeoutError,
  InternalServerError,
  RateLimitError,
} from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sseBody, type ChatMessage } from './model-script.js';
import { startScriptedModel, type ScriptedModel } from './scripted-model-server.js';

const API_KEY = 'sk-scripted-test';

describe('scripted model server, driven by the openai SDK', () => {
  let model: ScriptedModel;
  let client: OpenAI;

  beforeAll(async () => {
    model = await startScriptedModel({ apiKey: API_KEY, models: ['gpt-scripted'] });
    client = new OpenAI({ baseURL: model.baseUrl, apiKey: API_KEY, maxRetries: 0, logLevel: 'off' });
  });

  afterEach(() => {
    expect(model.pendingSteps()).toBe(0);
  });

  afterAll(async () => {
    await model?.stop();
  });

  const ask = [{ role: 'user' as const, content: 'What is the weather in Paris and Berlin?' }];

  it('streams text and reasoning in several deltas, then finish_reason stop and usage in the last chunk', async () => {
    model.enqueue({
      reasoning: 'The user greets me.',
      content: 'Hello there, how can I help?',
      chunkSize: 5,
    });

    const stream = await client.chat.completions.create({
      model: 'gpt-scripted',
      messages: ask,
      stream: true,
    });
    const contentDeltas: string[] = [];
    const reasoningDeltas: string[] = [];
    const finishReasons: string[] = [];
    let lastChunk: OpenAI.ChatCompletionChunk | undefined;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (choice?.delta.content) contentDeltas.push(choice.delta.content);
      const reasoning = (choice?.delta as { reasoning_content?: string } | undefined)?.reasoning_content;
      if (reasoning) reasoningDeltas.push(reasoning);
      if (choice?.finish_reason) finishReasons.push(choice.finish_reason);
      lastChunk = chunk;
    }

    expect(contentDeltas.length).toBeGreaterThan(1);
    expect(contentDeltas.join('')).toBe('Hello there, how can I help?');
    expect(reasoningDeltas.length).toBeGreaterThan(1);
    expect(reasoningDeltas.join('')).toBe('The user greets me.');
    expect(finishReasons).toEqual(['stop']);
    expect(lastChunk?.usage?.total_tokens).toBeGreaterThan(0);
    expect(lastChunk?.usage?.total_tokens).toBe(
      (lastChunk?.usage?.prompt_tokens ?? 0) + (lastChunk?.usage?.completion_tokens ?? 0),
    );
  });

  it('streams a parallel tool-call step that the SDK assembles into two complete calls', async () => {
    model.enqueue({
      toolCalls: [
        { name: 'get_weather', arguments: { city: 'Paris', unit: 'celsius' }, id: 'call_paris' },
        { name: 'get_weather', arguments: { city: 'Berlin', unit: 'celsius' } },
      ],
      chunkSize: 6,
      usage: { prompt_tokens: 11, completion_tokens: 7 },
    });

    const stream = client.chat.completions.stream({ model: 'gpt-scripted', messages: ask });
    let argumentDeltas = 0;
    stream.on('chunk', (chunk) => {
      if (chunk.choices[0]?.delta.tool_calls?.some((call) => call.function?.arguments)) argumentDeltas += 1;
    });
    const completion = await stream.finalChatCompletion();

    const choice = completion.choices[0];
    expect(choice?.finish_reason).toBe('tool_calls');
    const calls = (choice?.message.tool_calls ?? []).map((call) =>
      call.type === 'function'
        ? { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) }
        : call,
    );
    expect(calls).toEqual([
      { id: 'call_paris', name: 'get_weather', args: { city: 'Paris', unit: 'celsius' } },
      { id: expect.stringMatching(/^call_/), name: 'get_weather', args: { city: 'Berlin', unit: 'celsius' } },
    ]);
    expect(argumentDeltas).toBeGreaterThan(4);
    expect(completion.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  it('answers a non-streaming request with one chat.completion', async () => {
    model.enqueue({ content: 'Sunny.', toolCalls: [{ name: 'log', arguments: '{"raw": true' }] });

    const completion = await client.chat.completions.create({ model: 'gpt-scripted', messages: ask });

    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0]?.message.content).toBe('Sunny.');
    const call = completion.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' && call.function).toEqual({ name: 'log', arguments: '{"raw": true' });
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('when the step is raw, its body is written byte for byte in pieces, under any path ending in /chat/completions', async () => {
    const chunk = {
      id: 'c',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'recorded',
      choices: [{ index: 0, delta: { content: 'from a recording' }, finish_reason: 'stop' }],
    };
    model.enqueue({ raw: { body: sseBody([chunk]) } });
    const azure = new OpenAI({
      baseURL: model.baseUrl.replace(/\/v1$/, '/openai/deployments/d'),
      apiKey: API_KEY,
      maxRetries: 0,
      logLevel: 'off',
    });

    const stream = await azure.chat.completions.create({
      model: 'gpt-scripted',
      messages: ask,
      stream: true,
    });
    const received = [];
    for await (const part of stream) received.push(part);

    expect(received).toEqual([chunk]);
    expect(model.requests.at(-1)).toMatchObject({
      path: '/openai/deployments/d/chat/completions',
      outcome: 'raw',
    });
  });

  it('lists its models', async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(['gpt-scripted']);
  });

  it('when the step is a rate limit, the client gets 429 with Retry-After', async () => {
    model.enqueue({ fault: 'rate_limit', retryAfterSeconds: 7 });
    const error = await client.chat.completions
      .create({ model: 'gpt-scripted', messages: ask })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).status).toBe(429);
    expect((error as RateLimitError).headers.get('retry-after')).toBe('7');
  });

  it('when the step is a server error, the client gets 500', async () => {
    model.enqueue({ fault: 'server_error', message: 'upstream melted' });
    const error = await client.chat.completions
      .create({ model: 'gpt-scripted', messages: ask, stream: true })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as InternalServerError).status).toBe(500);
    expect((error as InternalServerError).message).toContain('upstream melted');
  });

  it('when the connection is dropped before the reply, the client gets a connection error', async () => {
    model.enqueue({ fault: 'drop_connection' });
    const error = await client.chat.completions
      .create({ model: 'gpt-scripted', messages: ask })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionError);
  });

  it('when the connection is dropped mid-stream, the client has the first deltas and then an error', async () => {
    model.enqueue({
      fault: 'drop_connection',
      partial: { content: 'Partial answer that never ends' },
      afterChunks: 3,
    });
    const received: string[] = [];
    const consume = async (): Promise<void> => {
      const stream = await client.chat.completions.create({
        model: 'gpt-scripted',
        messages: ask,
        stream: true,
      });
      for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? '');
    };
    // undici reports the dead socket as `TypeError: terminated` caused by `other side closed`.
    await expect(consume()).rejects.toThrow('terminated');
    expect(received.join('')).toBe('Partial ');
  });

  it('when the stream carries malformed JSON, the client fails with a parse error', async () => {
    model.enqueue({ fault: 'malformed_json' });
    const consume = async (): Promise<void> => {
      const stream = await client.chat.completions.create({
        model: 'gpt-scripted',
        messages: ask,
        stream: true,
      });
      for await (const _chunk of stream) {
        // drain
      }
    };
    await expect(consume()).rejects.toThrow(SyntaxError);
  });

  it('when a non-streamed body is malformed JSON, the client fails with a parse error', async () => {
    model.enqueue({ fault: 'malformed_json' });
    await expect(client.chat.completions.create({ model: 'gpt-scripted', messages: ask })).rejects.toThrow(
      SyntaxError,
    );
  });

  it('when the step hangs, the client times out and the server keeps serving', async () => {
    model.enqueue({ fault: 'hang' }, { content: 'after the hang' });
    const error = await client.chat.completions
      .create({ model: 'gpt-scripted', messages: ask }, { timeout: 200 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIConnectionTimeoutError);
    const next = await client.chat.completions.create({ model: 'gpt-scripted', messages: ask });
    expect(next.choices[0]?.message.content).toBe('after the hang');
  });

  it('when the script is exhausted, it answers 500 saying so and records the request', async () => {
    const before = model.requests.length;
    const error = await client.chat.completions
      .create({ model: 'gpt-scripted', messages: ask })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InternalServerError);
    expect((error as InternalServerError).message).toContain('script exhausted');
    expect(model.requests.length).toBe(before + 1);
    expect(model.requests.at(-1)?.outcome).toBe('script_exhausted');
  });

  it('records each request with method, path, headers and the parsed body', async () => {
    model.enqueue({ content: 'ok' });
    await client.chat.completions.create({ model: 'gpt-scripted', messages: ask, temperature: 0.2 });
    const last = model.requests.at(-1);
    expect(last).toMatchObject({
      method: 'POST',
      path: '/v1/chat/completions',
      outcome: 'reply',
      body: { model: 'gpt-scripted', messages: ask, temperature: 0.2 },
      step: { content: 'ok' },
    });
    expect(last?.headers['authorization']).toBe(`Bearer ${API_KEY}`);
    expect(last?.headers['content-type']).toContain('application/json');
  });

  it('when the API key is wrong, it answers 401', async () => {
    const stranger = new OpenAI({
      baseURL: model.baseUrl,
      apiKey: 'sk-wrong',
      maxRetries: 0,
      logLevel: 'off',
    });
    await expect(stranger.models.list()).rejects.toMatchObject({ status: 401 });
    expect(model.requests.at(-1)?.outcome).toBe('unauthorized');
  });
});

describe('scripted model server with a respond function', () => {
  it('when tasks run concurrently, each conversation gets the answer its last message calls for', async () => {
    const model = await startScriptedModel({
      respond: ({ body }) => {
        const last = body.messages.at(-1) as ChatMessage;
        return last.role === 'tool'
          ? { content: `The tool said ${String(last.content)}` }
          : { toolCalls: [{ name: 'lookup', arguments: { q: String(last.content) } }] };
      },
    });
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'unused', maxRetries: 0, logLevel: 'off' });
    try {
      const runTask = async (question: string): Promise<string | null | undefined> => {
        const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: question }];
        const first = await client.chat.completions.stream({ model: 'm', messages }).finalChatCompletion();
        const call = first.choices[0]?.message.tool_calls?.[0];
        if (call?.type !== 'function') throw new Error('expected a function call');
        messages.push(first.choices[0]!.message, {
          role: 'tool',
          tool_call_id: call.id,
          content: `result for ${JSON.parse(call.function.arguments).q}`,
        });
        const second = await client.chat.completions.create({ model: 'm', messages });
        return second.choices[0]?.message.content;
      };

      const answers = await Promise.all(['alpha', 'beta', 'gamma'].map(runTask));

      expect(answers).toEqual([
        'The tool said result for alpha',
        'The tool said result for beta',
        'The tool said result for gamma',
      ]);
      expect(model.requests).toHaveLength(6);
      const callIds = model.requests
        .flatMap((r) => (r.body as { messages: ChatMessage[] }).messages)
        .flatMap((m) => (m.role === 'tool' ? [m.tool_call_id] : []));
      expect(new Set(callIds).size).toBe(3);
    } finally {
      await model.stop();
    }
  });

  it('when the server stops with a request hanging, stop resolves and the client sees the connection close', async () => {
    const model = await startScriptedModel({ script: [{ fault: 'hang' }] });
    const client = new OpenAI({ baseURL: model.baseUrl, apiKey: 'unused', maxRetries: 0, logLevel: 'off' });
    const pending = client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
    });
    const outcome = pending.catch((e: unknown) => e);
    await model.waitForRequests(1);

    await model.stop();

    expect(await outcome).toBeInstanceOf(APIConnectionError);
  });
});
