import { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { completionIdentity, type ChatCompletionChunk } from './chat-completion-answer.js';
import { StreamedText } from './streamed-text.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const identity = completionIdentity(TRACE_ID, 'helper', new Date('2026-11-24T00:00:00Z'));

type Step = [
  attempt: number,
  type: 'message_chunk' | 'tool_thinking' | 'attempt_started',
  value: string | number,
];

/** Streams the events (seq in order) and answers every chunk, settled at the end as before `done`. */
function stream(steps: Step[]): ChatCompletionChunk[] {
  const text = new StreamedText(identity);
  const chunks: ChatCompletionChunk[] = [];
  steps.forEach(([attempt, type, value], index) => {
    const event = TaskEvent.parse({
      trace_id: TRACE_ID,
      seq: index + 1,
      ts: '2026-11-24T00:00:00.000Z',
      attempt,
      type,
      data:
        type === 'attempt_started'
          ? { drop_text_after_seq: value, resumed_steps: 0, resumed_tool_results: 0, rerun_call_ids: [] }
          : { delta: value },
    });
    chunks.push(...(text.chunks(event) ?? []));
  });
  chunks.push(...text.settle());
  return chunks;
}

/** What a client shows: `plain` ignores the agentmesh extension, `applied` applies its retractions. */
function shown(chunks: ChatCompletionChunk[], field: 'content' | 'reasoning_content') {
  let plain = '';
  let applied = '';
  for (const each of chunks) {
    const retract = each.agentmesh?.event === 'retract' ? each.agentmesh[`${field}_chars`] : undefined;
    if (typeof retract === 'number') applied = [...applied].slice(0, -retract).join('');
    const delta = each.choices[0]?.delta[field] ?? '';
    plain += delta;
    applied += delta;
  }
  return { plain, applied };
}

describe('the text of a streamed completion when a resumed attempt voids sent text', () => {
  it('without a resumption, every delta is one chunk as it came', () => {
    const chunks = stream([
      [1, 'message_chunk', 'Hel'],
      [1, 'message_chunk', 'lo'],
    ]);
    expect(chunks.map((each) => each.choices[0]?.delta)).toEqual([{ content: 'Hel' }, { content: 'lo' }]);
  });

  it('when the new attempt repeats the voided text, it is held back and only what goes beyond it is sent', () => {
    const chunks = stream([
      [1, 'message_chunk', 'It is'],
      [2, 'attempt_started', 0],
      [2, 'message_chunk', 'It '],
      [2, 'message_chunk', 'is sunny.'],
    ]);
    expect(shown(chunks, 'content')).toEqual({ plain: 'It is sunny.', applied: 'It is sunny.' });
    expect(chunks.some((each) => each.agentmesh?.event === 'retract')).toBe(false);
  });

  it('when the new attempt departs from it, a retract chunk counts the void characters (code points) and the new text follows', () => {
    const chunks = stream([
      [1, 'message_chunk', 'Intro. '],
      [1, 'message_chunk', 'Es ist 🌞'],
      [2, 'attempt_started', 1],
      [2, 'message_chunk', 'It is sunny.'],
    ]);
    expect(chunks).toContainEqual(
      expect.objectContaining({ agentmesh: { event: 'retract', content_chars: 8 } }),
    );
    expect(shown(chunks, 'content').applied).toBe('Intro. It is sunny.');
  });

  it('text the client holds that the new attempt never wrote again is retracted before the end', () => {
    const chunks = stream([
      [1, 'message_chunk', 'A long answer'],
      [2, 'attempt_started', 0],
      [2, 'message_chunk', 'A long'],
    ]);
    expect(shown(chunks, 'content')).toEqual({ plain: 'A long answer', applied: 'A long' });
  });

  it('reasoning is held back and retracted the same way, as reasoning_content', () => {
    const chunks = stream([
      [1, 'tool_thinking', 'maybe rain'],
      [2, 'attempt_started', 0],
      [2, 'tool_thinking', 'sun'],
      [2, 'message_chunk', 'Sunny.'],
    ]);
    expect(shown(chunks, 'reasoning_content').applied).toBe('sun');
    expect(chunks).toContainEqual(
      expect.objectContaining({
        agentmesh: { event: 'retract', reasoning_content_chars: 'maybe rain'.length },
      }),
    );
    expect(shown(chunks, 'content').plain).toBe('Sunny.');
  });

  it('after several resumptions the applied text is the last attempt’s answer', () => {
    const chunks = stream([
      [1, 'message_chunk', 'One, tw'],
      [2, 'attempt_started', 0],
      [2, 'message_chunk', 'One, two, thr'],
      [3, 'attempt_started', 0],
      [3, 'message_chunk', 'One, two, three.'],
    ]);
    expect(shown(chunks, 'content')).toEqual({ plain: 'One, two, three.', applied: 'One, two, three.' });
  });
});
