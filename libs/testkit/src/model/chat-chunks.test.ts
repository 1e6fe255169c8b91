import { describe, expect, it } from 'vitest';
import { contentChunks, finishingChunks, splitIntoPieces, usageOf } from './chat-chunks.js';

const identity = { id: 'chatcmpl-1', created: 1, model: 'm' };

describe('chat completion chunks', () => {
  it('splits text into pieces without cutting an emoji in half', () => {
    expect(splitIntoPieces('ab😀cd', 3)).toEqual(['ab😀', 'cd']);
    expect(splitIntoPieces('', 3)).toEqual([]);
    expect(() => splitIntoPieces('x', 0)).toThrow(RangeError);
  });

  it('streams a tool call as a header delta with id and name, then argument pieces keyed by index', () => {
    const chunks = contentChunks({ toolCalls: [{ name: 'f', arguments: { a: 1 } }] }, identity, [
      { id: 'call_1', name: 'f', arguments: '{"a":1}' },
    ]);
    const deltas = chunks.map((chunk) => chunk.choices[0]?.delta);
    expect(deltas).toEqual([
      { role: 'assistant', content: '' },
      { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] },
      { tool_calls: [{ index: 0, function: { arguments: '{"a"' } }] },
      { tool_calls: [{ index: 0, function: { arguments: ':1}' } }] },
    ]);
  });

  it('finishes with the finish reason, then a chunk without choices carrying usage', () => {
    const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
    const [finish, last] = finishingChunks({ content: 'x' }, identity, usage);
    expect(finish?.choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });
    expect(last).toMatchObject({ choices: [], usage });
  });

  it('estimates usage when the step gives none, and completes a partial one', () => {
    const request = { messages: [{ role: 'user', content: 'hello world' }] };
    expect(usageOf({ content: 'abcdefgh' }, request, [])).toMatchObject({ completion_tokens: 2 });
    expect(usageOf({ usage: { prompt_tokens: 5, completion_tokens: 6 } }, request, [])).toEqual({
      prompt_tokens: 5,
      completion_tokens: 6,
      total_tokens: 11,
    });
  });
});
