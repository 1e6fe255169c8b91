import { describe, expect, it } from 'vitest';
import { TaskEvent } from './events.js';
import { TaskTranscript } from './task-transcript.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** Builds a task's events in order: each call is the next seq, written by `attempt`. */
function eventLog() {
  const events: TaskEvent[] = [];
  const push = (attempt: number, type: string, data: unknown): TaskEvent => {
    const event = TaskEvent.parse({
      trace_id: TRACE_ID,
      seq: events.length + 1,
      ts: '2026-11-24T00:00:00.000Z',
      attempt,
      type,
      data,
    });
    events.push(event);
    return event;
  };
  return {
    events,
    chunk: (attempt: number, delta: string) => push(attempt, 'message_chunk', { delta }),
    thinking: (attempt: number, delta: string) => push(attempt, 'tool_thinking', { delta }),
    toolStart: (attempt: number, callId: string) =>
      push(attempt, 'tool_start', { call_id: callId, tool: 'search', arguments: {} }),
    toolResult: (attempt: number, callId: string) =>
      push(attempt, 'tool_result', { call_id: callId, tool: 'search', ok: true, result: 1, duration_ms: 1 }),
    attemptStarted: (attempt: number, dropTextAfterSeq: number) =>
      push(attempt, 'attempt_started', {
        drop_text_after_seq: dropTextAfterSeq,
        resumed_steps: 0,
        resumed_tool_results: 0,
        rerun_call_ids: [],
      }),
  };
}

function fold(events: TaskEvent[]): TaskTranscript {
  const transcript = new TaskTranscript();
  for (const event of events) transcript.add(event);
  return transcript;
}

describe('TaskTranscript: the text a task’s events add up to', () => {
  it('appends message_chunk deltas as the answer and tool_thinking deltas as the reasoning', () => {
    const log = eventLog();
    log.thinking(1, 'look it ');
    log.chunk(1, 'It is ');
    log.thinking(1, 'up');
    log.chunk(1, 'sunny');
    const transcript = fold(log.events);
    expect(transcript.answer).toBe('It is sunny');
    expect(transcript.reasoning).toBe('look it up');
    expect(transcript.seq).toBe(4);
  });

  it('when a resumed attempt starts, the earlier attempt’s text above drop_text_after_seq is void and the appended answer equals the new attempt’s', () => {
    const log = eventLog();
    log.chunk(1, 'Let me search. '); // 1
    log.toolStart(1, 'c1'); // 2
    log.toolResult(1, 'c1'); // 3
    log.thinking(1, 'the result says '); // 4
    log.chunk(1, 'It'); // 5  (the executor dies here)
    const started = log.attemptStarted(2, 3); // 6
    log.thinking(2, 'the result shows '); // 7
    log.chunk(2, 'It is sunny.'); // 8

    const transcript = new TaskTranscript();
    for (const event of log.events.slice(0, 5)) transcript.add(event);
    expect(transcript.answer).toBe('Let me search. It');
    expect(transcript.add(started)).toEqual({ answer: 'It', reasoning: 'the result says ' });
    expect(transcript.answer).toBe('Let me search. ');
    for (const event of log.events.slice(6)) transcript.add(event);
    expect(transcript.answer).toBe('Let me search. It is sunny.');
    expect(transcript.reasoning).toBe('the result shows ');
  });

  it('drop_text_after_seq 0 voids all of the earlier attempts’ text', () => {
    const log = eventLog();
    log.thinking(1, 'hmm');
    log.chunk(1, 'Itt');
    log.attemptStarted(2, 0);
    log.chunk(2, 'It is sunny.');
    const transcript = fold(log.events);
    expect(transcript.answer).toBe('It is sunny.');
    expect(transcript.reasoning).toBe('');
  });

  it('text at or below drop_text_after_seq stands, and so does text of the starting attempt itself', () => {
    const log = eventLog();
    log.chunk(1, 'kept ');
    log.chunk(1, 'also kept ');
    log.attemptStarted(2, 2);
    const transcript = fold(log.events);
    expect(transcript.answer).toBe('kept also kept ');
    // An attempt_started of attempt 2 never voids attempt 2's own text, nor a later attempt's.
    const own = eventLog();
    own.chunk(1, 'a ');
    own.chunk(2, 'b ');
    own.chunk(3, 'c ');
    own.attemptStarted(2, 1);
    expect(fold(own.events).answer).toBe('a b c ');
  });

  it('after several resumptions only the text each new attempt voids goes, and the answer equals the final one', () => {
    const log = eventLog();
    log.chunk(1, 'Hello, '); // 1
    log.chunk(1, 'wor'); // 2   attempt 1 dies
    log.attemptStarted(2, 1); // 3
    log.chunk(2, 'world'); // 4
    log.toolStart(2, 'c1'); // 5
    log.toolResult(2, 'c1'); // 6
    log.chunk(2, '. The res'); // 7  attempt 2 dies
    log.attemptStarted(3, 6); // 8
    log.chunk(3, '. The result: 42'); // 9  attempt 3 dies
    log.attemptStarted(4, 6); // 10
    log.thinking(4, 'again'); // 11
    log.chunk(4, '. The result: 42.'); // 12
    const transcript = fold(log.events);
    expect(transcript.answer).toBe('Hello, world. The result: 42.');
    expect(transcript.reasoning).toBe('again');
  });

  it('a resumption that takes back less than what the last one restored keeps the rest', () => {
    const log = eventLog();
    log.chunk(1, 'a'); // 1
    log.chunk(1, 'b'); // 2
    log.attemptStarted(2, 1); // 3: voids b
    log.chunk(2, 'B'); // 4
    log.chunk(2, 'C'); // 5
    log.attemptStarted(3, 4); // 6: voids C only
    log.chunk(3, 'c'); // 7
    expect(fold(log.events).answer).toBe('aBc');
  });

  it('an event replayed at or below the last seq folded is ignored, so a resumed stream does not double text', () => {
    const log = eventLog();
    log.chunk(1, 'one ');
    log.chunk(1, 'two');
    const transcript = fold(log.events);
    expect(transcript.add(log.events[0]!)).toBeUndefined();
    transcript.add(log.events[1]!);
    expect(transcript.answer).toBe('one two');
  });
});
