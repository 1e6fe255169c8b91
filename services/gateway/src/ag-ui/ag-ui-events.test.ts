import { EventSchema } from '@ag-ui/core/schemas';
import type { EventType, TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { AgUiEventMapper, interruptId } from './ag-ui-events.js';

const TRACE = 'a'.repeat(32);

/** A task's log: events numbered from 1. */
function log(...entries: [EventType, unknown][]): TaskEvent[] {
  return entries.map(
    ([type, data], index) =>
      ({ trace_id: TRACE, seq: index + 1, ts: '', attempt: 1, type, data }) as TaskEvent,
  );
}

const delta = (call_id: string, text: string): [EventType, unknown] => [
  'tool_call_delta',
  { call_id, tool: 'search', delta: text },
];
const start = (call_id: string, q: string): [EventType, unknown] => [
  'tool_start',
  { call_id, tool: 'search', arguments: { q } },
];
const step = (n: number): [EventType, unknown] => [
  'step_finished',
  {
    step: n,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    total_usage: { prompt_tokens: n, completion_tokens: n, total_tokens: 2 * n },
  },
];

function mapAll(events: TaskEvent[]) {
  const mapper = new AgUiEventMapper({ traceId: TRACE, threadId: 'thread-1', runId: 'run-1' });
  return events.flatMap((event) => mapper.map(event));
}

describe('mapping a task to AG-UI events', () => {
  it('when a task streams two tool calls, waits for an approval and answers, the AG-UI events are valid, in order, with the arguments as streamed and the approval as an interrupt', () => {
    const events = mapAll(
      log(
        ['tool_thinking', { delta: 'Two searches.' }],
        delta('c1', '{"q":'),
        delta('c2', '{"q":"b"}'),
        delta('c1', '"a"}'),
        step(1),
        start('c1', 'a'),
        start('c2', 'b'),
        ['tool_result', { call_id: 'c1', tool: 'search', ok: true, result: { hits: 1 }, duration_ms: 3 }],
        [
          'approval_requested',
          {
            call_id: 'c2',
            tool: 'search',
            arguments: { q: 'b' },
            reason: 'guarded',
            expires_at: '2030-01-01T00:00:00.000Z',
          },
        ],
        [
          'approval_decided',
          { call_id: 'c2', tool: 'search', approved: true, decided_at: '2030-01-01T00:00:00.000Z' },
        ],
        ['tool_result', { call_id: 'c2', tool: 'search', ok: true, result: { hits: 2 }, duration_ms: 3 }],
        ['message_chunk', { delta: 'Found ' }],
        ['message_chunk', { delta: 'both.' }],
        step(2),
        [
          'done',
          {
            message: 'Found both.',
            steps: 2,
            usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
            duration_ms: 9,
          },
        ],
      ),
    );

    for (const event of events)
      expect(EventSchema.safeParse(event).success, JSON.stringify(event)).toBe(true);
    expect(events.map((event) => event.type)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'REASONING_START',
      'REASONING_MESSAGE_START',
      'REASONING_MESSAGE_CONTENT',
      'REASONING_MESSAGE_END',
      'REASONING_END',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_ARGS',
      'STEP_FINISHED',
      'TOOL_CALL_END',
      'TOOL_CALL_END',
      'TOOL_CALL_RESULT',
      'RUN_FINISHED',
      'RUN_STARTED',
      'CUSTOM',
      'TOOL_CALL_RESULT',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    const argsOf = (id: string) =>
      events
        .filter((event) => event.type === 'TOOL_CALL_ARGS' && event['toolCallId'] === id)
        .map((event) => event['delta'])
        .join('');
    expect(argsOf('c1')).toBe('{"q":"a"}');
    expect(argsOf('c2')).toBe('{"q":"b"}');
    const finishes = events.filter((event) => event.type === 'RUN_FINISHED');
    expect(finishes[0]).toMatchObject({
      runId: 'run-1',
      threadId: 'thread-1',
      outcome: {
        type: 'interrupt',
        interrupts: [{ id: interruptId(TRACE, 'c2'), toolCallId: 'c2', reason: 'tool_approval' }],
      },
    });
    expect(events.filter((event) => event.type === 'RUN_STARTED')[1]).toMatchObject({ runId: `${TRACE}-10` });
    expect(finishes[1]).toMatchObject({
      runId: `${TRACE}-10`,
      result: { text: 'Found both.' },
      outcome: { type: 'success' },
    });
  });

  it('when a task fails, the run ends with RUN_ERROR carrying the code; when it is cancelled mid-answer, the open message is ended and the run finishes cancelled', () => {
    const failed = mapAll(
      log(['error', { code: 'LLM_UNAVAILABLE', message: 'model down', retryable: true }]),
    );
    expect(failed.map((event) => event.type)).toEqual(['RUN_STARTED', 'RUN_ERROR']);
    expect(failed[1]).toMatchObject({ code: 'LLM_UNAVAILABLE', message: 'model down' });

    const cancelled = mapAll(
      log(
        ['message_chunk', { delta: 'Hal' }],
        ['error', { code: 'CANCELLED', message: 'stopped', retryable: false }],
      ),
    );
    for (const event of cancelled) expect(EventSchema.safeParse(event).success).toBe(true);
    expect(cancelled.map((event) => event.type)).toEqual([
      'RUN_STARTED',
      'STEP_STARTED',
      'TEXT_MESSAGE_START',
      'TEXT_MESSAGE_CONTENT',
      'TEXT_MESSAGE_END',
      'STEP_FINISHED',
      'RUN_FINISHED',
    ]);
    expect(cancelled.at(-1)).toMatchObject({ outcome: { type: 'cancelled' } });
  });

  it('when a resumed attempt starts, the call whose arguments were streaming ends and attempt_started is a CUSTOM event', () => {
    const events = mapAll(
      log(delta('c1', '{"q":'), [
        'attempt_started',
        { drop_text_after_seq: 0, resumed_steps: 0, resumed_tool_results: 0, rerun_call_ids: [] },
      ]),
    );
    expect(events.map((event) => [event.type, event['name']])).toEqual([
      ['RUN_STARTED', undefined],
      ['STEP_STARTED', undefined],
      ['TOOL_CALL_START', undefined],
      ['TOOL_CALL_ARGS', undefined],
      ['TOOL_CALL_END', undefined],
      ['STEP_FINISHED', undefined],
      ['CUSTOM', 'agentmesh.attempt_started'],
    ]);
  });
});
