/**
 * The console's chat (console/threads-view.js, plain JavaScript served to the browser) run in Node: what a
 * thread's stored entries (`GET /v1/threads/{id}`'s `entries`) read as in the transcript.
 */
import { describe, expect, it } from 'vitest';

const { threadTranscript } = (await import(new URL('../console/threads-view.js', import.meta.url).href)) as {
  threadTranscript: (entries: unknown[]) => Record<string, unknown>[];
};

const T1 = 'a'.repeat(32);
const T2 = 'b'.repeat(32);
const at = '2026-11-28T10:00:00.000Z';

describe('console chat transcript', () => {
  it('when a thread holds turns with a tool call, a compaction and an interrupted turn, the transcript reads them in order, each call with its result', () => {
    const entries = [
      // Out of order on purpose: the transcript follows the stream sequence.
      {
        seq: 3,
        entry: {
          type: 'turn',
          trace_id: T2,
          at,
          interrupted: true,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'And its founder?' }] }],
        },
      },
      {
        seq: 1,
        entry: {
          type: 'turn',
          trace_id: T1,
          at,
          messages: [
            { role: 'user', content: 'When was ByteDance founded?' },
            {
              role: 'assistant',
              content: null,
              tool_calls: [
                {
                  id: 'call_1',
                  type: 'function',
                  function: { name: 'search_company_basic', arguments: '{"keyword":"ByteDance"}' },
                },
              ],
            },
            { role: 'tool', tool_call_id: 'call_1', content: '{"StartDate":"2012"}' },
            { role: 'assistant', content: 'In 2012.' },
          ],
        },
      },
      {
        seq: 2,
        entry: { type: 'compaction', keep_from_seq: 1, method: 'cut', at, fallback_reason: 'too long' },
      },
    ];
    expect(threadTranscript(entries)).toEqual([
      { kind: 'user', text: 'When was ByteDance founded?', trace_id: T1 },
      {
        kind: 'tool',
        tool: 'search_company_basic',
        arguments: { keyword: 'ByteDance' },
        result: { StartDate: '2012' },
        trace_id: T1,
      },
      { kind: 'assistant', text: 'In 2012.', trace_id: T1 },
      { kind: 'compaction', text: 'Earlier turns cut from the history (too long)' },
      { kind: 'user', text: 'And its founder?', trace_id: T2 },
      { kind: 'assistant', text: '(interrupted by a newer message)', interrupted: true },
    ]);
    expect(threadTranscript([])).toEqual([]);
  });
});
