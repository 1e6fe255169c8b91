// How a task's `done` becomes the OpenAI façade's finish reason: a cut or filtered answer says so, as
// OpenAI's own API would, instead of `stop`.
import { DoneEvent, newTraceId } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { CompletionCollector, finishingChunks } from './chat-completion-answer.js';

const identity = { id: 'chatcmpl-1', created: 1, model: 'agent' };

function done(data: Record<string, unknown>): DoneEvent {
  return DoneEvent.parse({
    trace_id: newTraceId(),
    seq: 3,
    ts: new Date().toISOString(),
    attempt: 1,
    type: 'done',
    data: {
      message: 'The answer is',
      steps: 1,
      usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 },
      duration_ms: 5,
      ...data,
    },
  });
}

describe('the façade finish reason', () => {
  it('when the answer was cut at the token limit, the streamed and the whole completion say length', () => {
    const cut = done({ finish_reason: 'length', truncated: true });
    expect(finishingChunks(identity, cut, false)[0]?.choices[0]?.finish_reason).toBe('length');
    const whole = new CompletionCollector(identity, cut.trace_id).completion(cut);
    expect(whole.choices[0]?.finish_reason).toBe('length');
  });

  it('when the provider filtered the answer, the completion says content_filter', () => {
    const filtered = done({ finish_reason: 'content_filter', truncated: true });
    expect(
      new CompletionCollector(identity, filtered.trace_id).completion(filtered).choices[0]?.finish_reason,
    ).toBe('content_filter');
  });

  it('when the answer is whole, or the provider gave no reason, the completion says stop', () => {
    expect(
      finishingChunks(identity, done({ finish_reason: 'stop' }), false)[0]?.choices[0]?.finish_reason,
    ).toBe('stop');
    expect(finishingChunks(identity, done({}), false)[0]?.choices[0]?.finish_reason).toBe('stop');
  });
});
