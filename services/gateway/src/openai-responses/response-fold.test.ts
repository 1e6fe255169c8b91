import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { ResponseFold, type ResponseIdentity, type ResponseStreamEvent } from './response-fold.js';

const traceId = 'ab'.repeat(16);
const identity: ResponseIdentity = {
  traceId,
  createdAt: 1_700_000_000,
  model: 'helper',
  background: false,
  instructions: null,
  metadata: {},
  textFormat: { type: 'text' },
  previousResponseId: null,
  threadId: 'th_1',
};
const usage = { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 };
let seq = 0;
const at = (attempt = 1) => ({ trace_id: traceId, ts: '2026-11-28T08:00:00Z', attempt, seq: ++seq });
const chunk = (delta: string, attempt = 1): TaskEvent => ({
  ...at(attempt),
  type: 'message_chunk',
  data: { delta },
});
const done = (message: string, extra: object = {}): TaskEvent =>
  ({ ...at(), type: 'done', data: { message, steps: 1, usage, duration_ms: 1, ...extra } }) as TaskEvent;

function run(events: TaskEvent[]): { fold: ResponseFold; stream: ResponseStreamEvent[] } {
  const fold = new ResponseFold(identity);
  const stream = [...fold.open(), ...events.flatMap((event) => fold.add(event))];
  return { fold, stream };
}

describe('response fold', () => {
  it('the same log folds into the same stream events with the same sequence numbers, and a replayed seq adds nothing', () => {
    seq = 0;
    const events = [chunk('a'), chunk('b'), done('ab')];
    const first = run(events).stream;
    const again = run(events);
    expect(again.stream).toEqual(first);
    expect(again.fold.add(events[1]!)).toEqual([]);
    expect(first.map((event) => event.sequence_number)).toEqual(first.map((_, index) => index));
  });

  it('a resumed attempt voids the text after its cut: the item ends incomplete and leaves the output, the answer is the new attempt', () => {
    seq = 0;
    const events: TaskEvent[] = [
      chunk('The ans'),
      {
        ...at(2),
        type: 'attempt_started',
        data: { drop_text_after_seq: 0, resumed_steps: 0, resumed_tool_results: 0, rerun_call_ids: [] },
      },
      chunk('The answer.', 2),
      done('The answer.'),
    ];
    const { fold, stream } = run(events);
    const itemsDone = stream.filter((event) => event.type === 'response.output_item.done');
    expect(itemsDone.map((event) => (event.item as { status: string }).status)).toEqual([
      'incomplete',
      'completed',
    ]);
    expect(stream.some((event) => event.type === 'agentmesh.attempt_started')).toBe(true);
    const response = fold.response();
    expect(response.output).toHaveLength(1);
    expect(response.output[0]).toMatchObject({ content: [{ text: 'The answer.' }], phase: 'final_answer' });
  });

  it('a cut answer ends incomplete, an error failed, a cancel cancelled; an answer never streamed is one delta at done', () => {
    seq = 0;
    const cut = run([chunk('Part'), done('Partial', { truncated: true, finish_reason: 'length' })]);
    expect(cut.stream.at(-1)?.type).toBe('response.incomplete');
    expect(cut.fold.response()).toMatchObject({
      status: 'incomplete',
      incomplete_details: { reason: 'max_output_tokens' },
    });
    // The rest of the final text, when the streamed text is its start.
    expect(
      cut.stream.filter((event) => event.type === 'response.output_text.delta').map((e) => e.delta),
    ).toEqual(['Part', 'ial']);

    const failed = run([
      { ...at(), type: 'error', data: { code: 'TOOL_ERROR', message: 'x', retryable: false } },
    ]);
    expect(failed.stream.at(-1)?.type).toBe('response.failed');
    expect(failed.fold.response()).toMatchObject({ status: 'failed', error: { code: 'tool_error' } });

    const cancelled = run([
      { ...at(), type: 'error', data: { code: 'CANCELLED', message: 'x', retryable: false } },
    ]);
    expect(cancelled.fold.response().status).toBe('cancelled');

    const silent = run([done('Whole.')]);
    expect(silent.stream.filter((event) => event.type === 'response.output_text.delta')).toHaveLength(1);
    expect(silent.fold.response().output).toMatchObject([{ type: 'message', content: [{ text: 'Whole.' }] }]);
  });

  it('an approval waiting is an agentmesh item done when decided, and the retrieve of a waiting task says in progress', () => {
    seq = 0;
    const { fold, stream } = run([
      {
        ...at(),
        type: 'approval_requested',
        data: {
          call_id: 'c1',
          tool: 'pay',
          arguments: { n: 1 },
          reason: 'money',
          expires_at: '2026-11-29T00:00:00Z',
        },
      },
    ]);
    expect(stream.at(-1)).toMatchObject({
      type: 'response.output_item.added',
      item: { type: 'agentmesh_approval_request', name: 'pay', arguments: '{"n":1}', status: 'in_progress' },
    });
    expect(fold.settledBy({ status: 'waiting_approval' })).toMatchObject({
      status: 'in_progress',
      agentmesh: { state: 'input_required' },
    });
    const decided = fold.add({
      ...at(),
      type: 'approval_decided',
      data: { call_id: 'c1', tool: 'pay', approved: true, decided_at: '2026-11-28T08:00:01Z' },
    });
    expect(decided).toMatchObject([
      { type: 'response.output_item.done', item: { approved: true, status: 'completed' } },
    ]);
  });
});
