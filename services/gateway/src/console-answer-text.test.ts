/**
 * The console's answer fold (console/answer-text.js, plain JavaScript served to the browser) run in Node:
 * the same events as @agentmesh/protocol's TaskTranscript must give the same answer.
 */
import { TaskEvent, TaskTranscript } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';

interface AnswerText {
  add(event: TaskEvent): boolean;
  readonly text: string;
}

// Imported by URL: the console's scripts are JavaScript outside the TypeScript project.
const consoleModule = (file: string): Promise<Record<string, unknown>> =>
  import(new URL(`../console/${file}`, import.meta.url).href) as Promise<Record<string, unknown>>;
const { AnswerText } = (await consoleModule('answer-text.js')) as { AnswerText: new () => AnswerText };

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const event = (seq: number, attempt: number, type: string, data: unknown): TaskEvent =>
  TaskEvent.parse({ trace_id: TRACE_ID, seq, ts: '2026-11-24T00:00:00.000Z', attempt, type, data });
const attemptStarted = (seq: number, attempt: number, dropTextAfterSeq: number): TaskEvent =>
  event(seq, attempt, 'attempt_started', {
    drop_text_after_seq: dropTextAfterSeq,
    resumed_steps: 0,
    resumed_tool_results: 0,
    rerun_call_ids: [],
  });

describe('the console’s answer when a resumed attempt takes over', () => {
  const events = [
    event(1, 1, 'message_chunk', { delta: 'Hello, ' }),
    event(2, 1, 'message_chunk', { delta: 'wor' }),
    attemptStarted(3, 2, 1),
    event(4, 2, 'message_chunk', { delta: 'world' }),
    event(5, 2, 'tool_start', { call_id: 'c1', tool: 't', arguments: {} }),
    event(6, 2, 'tool_result', { call_id: 'c1', tool: 't', ok: true, result: 1, duration_ms: 1 }),
    event(7, 2, 'message_chunk', { delta: '. The res' }),
    attemptStarted(8, 3, 6),
    event(9, 3, 'message_chunk', { delta: '. The result: 42.' }),
  ];

  it('is cut back on attempt_started (the view redraws it) and ends as the protocol’s fold of the same events', () => {
    const answer = new AnswerText();
    const transcript = new TaskTranscript();
    const redraws: number[] = [];
    for (const each of events) {
      if (answer.add(each)) redraws.push(each.seq);
      transcript.add(each);
      expect(answer.text).toBe(transcript.answer);
    }
    expect(redraws).toEqual([3, 8]);
    expect(answer.text).toBe('Hello, world. The result: 42.');
  });

  it('an attempt_started that voids nothing shown asks for no redraw, and a replayed seq is ignored', () => {
    const answer = new AnswerText();
    answer.add(event(1, 1, 'message_chunk', { delta: 'kept' }));
    expect(answer.add(attemptStarted(2, 2, 1))).toBe(false);
    answer.add(event(1, 1, 'message_chunk', { delta: 'kept' }));
    expect(answer.text).toBe('kept');
  });

  it('the task view listens for attempt_started (EventSource delivers only the names it listens for)', async () => {
    const { EVENT_NAMES } = (await consoleModule('task-view.js')) as { EVENT_NAMES: string[] };
    expect(EVENT_NAMES).toContain('attempt_started');
  });
});
