import { describe, expect, it } from 'vitest';
import { MalformedChunkError, StreamAccumulator, UpstreamReportedError } from './stream-accumulator.js';

const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) => ({
  object: 'chat.completion.chunk',
  choices: [{ index: 0, delta, finish_reason }],
});
const toolDelta = (call: Record<string, unknown>) => chunk({ tool_calls: [call] });

describe('stream accumulator', () => {
  it('when text and reasoning stream in pieces, each piece is handed back and the message joins them', () => {
    const accumulator = new StreamAccumulator();
    const handed = [
      chunk({ role: 'assistant', content: '' }),
      chunk({ reasoning_content: 'Think' }),
      chunk({ reasoning_content: 'ing.' }),
      chunk({ content: 'Hel' }),
      chunk({ content: 'lo' }),
      chunk({}, 'stop'),
      { choices: [], usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } },
    ].map((c) => accumulator.applyChunk(c));

    expect(handed).toEqual([
      {},
      { reasoning: 'Think' },
      { reasoning: 'ing.' },
      { content: 'Hel' },
      { content: 'lo' },
      {},
      {},
    ]);
    expect(accumulator.result()).toEqual({
      message: { role: 'assistant', content: 'Hello', reasoning_content: 'Thinking.' },
      finishReason: 'stop',
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
    });
  });

  it('when parallel tool calls arrive interleaved in pieces, each is assembled, they keep index order, and each piece is handed on once with id and name on its first', () => {
    const accumulator = new StreamAccumulator();
    const handed: unknown[] = [];
    for (const c of [
      toolDelta({ index: 1, id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '' } }),
      toolDelta({
        index: 0,
        id: 'call_a',
        type: 'function',
        function: { name: 'get_weather', arguments: '' },
      }),
      toolDelta({ index: 0, function: { arguments: '{"city":' } }),
      toolDelta({ index: 1, function: { arguments: '{"tz":"UTC"}' } }),
      toolDelta({ index: 0, function: { arguments: '"Paris"}' } }),
      chunk({}, 'tool_calls'),
    ]) {
      const { toolCalls, ...text } = accumulator.applyChunk(c);
      expect(text).toEqual({});
      handed.push(...(toolCalls ?? []));
    }
    expect(handed).toEqual([
      { index: 1, id: 'call_b', name: 'get_time', arguments: '' },
      { index: 0, id: 'call_a', name: 'get_weather', arguments: '' },
      { index: 0, arguments: '{"city":' },
      { index: 1, arguments: '{"tz":"UTC"}' },
      { index: 0, arguments: '"Paris"}' },
    ]);
    const { message, finishReason } = accumulator.result();
    expect(finishReason).toBe('tool_calls');
    expect(message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_b', type: 'function', function: { name: 'get_time', arguments: '{"tz":"UTC"}' } },
      ],
    });
  });

  it('when a server repeats id and name on every piece or leaves out the index, the calls still come out whole', () => {
    const accumulator = new StreamAccumulator();
    for (const c of [
      toolDelta({ id: 'call_a', function: { name: 'f', arguments: '{"x"' } }),
      toolDelta({ id: 'call_a', function: { name: 'f', arguments: ':1}' } }),
      toolDelta({ id: 'call_b', function: { name: 'g', arguments: '{}' } }),
    ]) {
      accumulator.applyChunk(c);
    }
    expect(accumulator.result().message.tool_calls).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"x":1}' } },
      { id: 'call_b', type: 'function', function: { name: 'g', arguments: '{}' } },
    ]);
  });

  it('when a server sends `reasoning` and `reasoning_content` with the same text, it is taken once', () => {
    const accumulator = new StreamAccumulator();
    expect(accumulator.applyChunk(chunk({ reasoning: 'hmm', reasoning_content: 'hmm' }))).toEqual({
      reasoning: 'hmm',
    });
    expect(accumulator.applyChunk(chunk({ reasoning: ' ok' }))).toEqual({ reasoning: ' ok' });
    expect(accumulator.result().message.reasoning_content).toBe('hmm ok');
  });

  it('when a whole chat.completion is applied, it reads like the stream would have', () => {
    const accumulator = new StreamAccumulator();
    const handed = accumulator.applyCompletion({
      object: 'chat.completion',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Sunny.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'log', arguments: '{}' } }],
          },
          finish_reason: 'tool_calls',
        },
      ],
    });
    expect(handed).toEqual({
      content: 'Sunny.',
      toolCalls: [{ index: 0, id: 'call_1', name: 'log', arguments: '{}' }],
    });
    expect(accumulator.result()).toEqual({
      message: {
        role: 'assistant',
        content: 'Sunny.',
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'log', arguments: '{}' } }],
      },
      finishReason: 'tool_calls',
      // None sent: the client estimates it.
      usage: undefined,
    });
  });

  it('when usage names cached prompt tokens (OpenAI prompt_tokens_details, DeepSeek prompt_cache_hit_tokens), they are the cache reads', () => {
    const openai = new StreamAccumulator();
    openai.applyChunk({ choices: [{ index: 0, delta: { content: 'x' }, finish_reason: 'stop' }] });
    openai.applyChunk({
      choices: [],
      usage: {
        prompt_tokens: 2006,
        completion_tokens: 300,
        total_tokens: 2306,
        prompt_tokens_details: { cached_tokens: 1920 },
      },
    });
    expect(openai.result().usage).toEqual({
      prompt_tokens: 2006,
      completion_tokens: 300,
      total_tokens: 2306,
      cache_read_tokens: 1920,
    });
    const deepseek = new StreamAccumulator();
    deepseek.applyChunk({
      choices: [],
      usage: {
        prompt_tokens: 10,
        completion_tokens: 1,
        total_tokens: 11,
        prompt_cache_hit_tokens: 8,
        prompt_cache_miss_tokens: 2,
      },
    });
    expect(deepseek.result().usage?.cache_read_tokens).toBe(8);
  });

  it('when usage leaves out the total, the total is the sum', () => {
    const accumulator = new StreamAccumulator();
    accumulator.applyChunk({ choices: [], usage: { prompt_tokens: 2, completion_tokens: 5 } });
    expect(accumulator.result().usage).toEqual({ prompt_tokens: 2, completion_tokens: 5, total_tokens: 7 });
    expect(accumulator.hasChoice).toBe(false);
  });

  it('when chunks carry the completion id and the model that answered, the result names both as the first chunk gave them', () => {
    const accumulator = new StreamAccumulator();
    const identity = { id: 'chatcmpl-7f3a', model: 'gpt-4o-2024-08-06' };
    accumulator.applyChunk({ ...identity, ...chunk({ role: 'assistant', content: 'Hi' }) });
    accumulator.applyChunk({ id: 'chatcmpl-other', model: 'other-model', ...chunk({}, 'stop') });
    expect(accumulator.result()).toMatchObject({
      responseId: 'chatcmpl-7f3a',
      responseModel: 'gpt-4o-2024-08-06',
    });
  });

  it('when a whole chat.completion carries its id and model, the result names both', () => {
    const accumulator = new StreamAccumulator();
    accumulator.applyCompletion({
      id: 'chatcmpl-b21c',
      object: 'chat.completion',
      model: 'llama3.1:8b',
      choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
    });
    expect(accumulator.result()).toMatchObject({ responseId: 'chatcmpl-b21c', responseModel: 'llama3.1:8b' });
  });

  it('when a server sends no id or model, or ones that are not strings, the answer still assembles without them', () => {
    const accumulator = new StreamAccumulator();
    accumulator.applyChunk({ id: 17, model: { name: 'x' }, ...chunk({ content: 'Hi' }) });
    accumulator.applyChunk({ id: '', model: '', ...chunk({}, 'stop') });
    const result = accumulator.result();
    expect(result.message.content).toBe('Hi');
    expect(result).not.toHaveProperty('responseId');
    expect(result).not.toHaveProperty('responseModel');
  });

  it('when a chunk is not shaped like a chat completion chunk, it is rejected as malformed', () => {
    expect(() => new StreamAccumulator().applyChunk([1, 2])).toThrow(MalformedChunkError);
    expect(() => new StreamAccumulator().applyChunk({ choices: 'no' })).toThrow(MalformedChunkError);
    expect(() => new StreamAccumulator().applyChunk(chunk({ content: 42 }))).toThrow(MalformedChunkError);
    expect(() => new StreamAccumulator().applyChunk(toolDelta({ index: -1 }))).toThrow(MalformedChunkError);
  });

  it('when a tool call never got a name, the result is rejected as malformed', () => {
    const accumulator = new StreamAccumulator();
    accumulator.applyChunk(toolDelta({ index: 0, id: 'call_1', function: { arguments: '{}' } }));
    expect(() => accumulator.result()).toThrow(/has no function name/);
  });

  it('when a chunk carries an error object, the upstream error is raised with its message', () => {
    expect(() =>
      new StreamAccumulator().applyChunk({ error: { message: 'context length exceeded' } }),
    ).toThrow(new UpstreamReportedError('context length exceeded'));
  });
});
