import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { EventTally } from './event-tally.js';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const event = (seq: number, type: TaskEvent['type'], data: unknown = {}): TaskEvent =>
  ({ trace_id: TRACE, seq, type, ts: '2025-01-01T00:00:00.000Z', attempt: 1, data }) as TaskEvent;

function tallyOf(events: TaskEvent[], expectedAnswer?: string): EventTally {
  const tally = new EventTally(performance.now(), expectedAnswer);
  for (const e of events) tally.add(e);
  return tally;
}

describe('a bench client tallying a task’s events', () => {
  it('a task ending in done succeeds, with its events and message chunks counted', () => {
    const tally = tallyOf(
      [
        event(1, 'tool_start'),
        event(2, 'tool_result'),
        event(3, 'message_chunk', { delta: 'a' }),
        event(4, 'message_chunk', { delta: 'b' }),
        event(5, 'done', { message: 'ab' }),
      ],
      'ab',
    );
    expect(tally.terminal).toBe(true);
    expect(tally.outcome.failure).toBeUndefined();
    expect(tally.outcome).toMatchObject({ events: 5, messageChunks: 2 });
    expect(tally.outcome.firstChunkMs).toBeGreaterThanOrEqual(0);
  });

  it('a task ending in an error event is a failure naming the error, not a success', () => {
    const tally = tallyOf([event(1, 'error', { code: 'MODEL_UNAVAILABLE', message: 'down' })]);
    expect(tally.terminal).toBe(true);
    expect(tally.outcome.failure).toMatch(/error event: .*MODEL_UNAVAILABLE/);
  });

  it('a seq that does not increase is a failure', () => {
    const tally = tallyOf([
      event(1, 'message_chunk', { delta: 'a' }),
      event(1, 'message_chunk', { delta: 'b' }),
      event(2, 'done', { message: 'ab' }),
    ]);
    expect(tally.outcome.failure).toMatch(/seq 1 after seq 1/);
  });

  it('an event after the terminal one is a failure', () => {
    const tally = tallyOf([event(1, 'done', { message: '' }), event(2, 'message_chunk', { delta: 'x' })]);
    expect(tally.outcome.failure).toMatch(/after the terminal event/);
  });

  it('chunks that do not add up to the final answer (one lost on the way) are a failure', () => {
    const tally = tallyOf([event(1, 'message_chunk', { delta: 'a' }), event(2, 'done', { message: 'ab' })]);
    expect(tally.outcome.failure).toMatch(/do not add up/);
  });

  it('a final answer other than the scripted one is a failure', () => {
    const tally = tallyOf(
      [event(1, 'message_chunk', { delta: 'x' }), event(2, 'done', { message: 'x' })],
      'ab',
    );
    expect(tally.outcome.failure).toMatch(/not the scripted one/);
  });

  it('without a chunk there is no first-chunk time, and no terminal event means not finished', () => {
    const tally = tallyOf([event(1, 'tool_start')]);
    expect(tally.terminal).toBe(false);
    expect(tally.outcome.firstChunkMs).toBeUndefined();
  });
});
