import type { EventData } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { toolCallDeltaRelay } from './tool-call-delta-relay.js';

describe('relaying tool call pieces as tool_call_delta data', () => {
  it('when a call names its id and tool only on a later piece, the earlier pieces are held and leave with it; a call that never gets an id sends nothing', () => {
    const sent: EventData<'tool_call_delta'>[] = [];
    const relay = toolCallDeltaRelay((data) => sent.push(data), 0);
    relay({ index: 0, arguments: '{"q"' });
    relay({ index: 1, name: 'fetch', arguments: '{"u":1}' });
    expect(sent).toEqual([]);
    relay({ index: 0, id: 'call_a', arguments: '' });
    expect(sent).toEqual([]);
    relay({ index: 0, name: 'search', arguments: ':"x"' });
    relay({ index: 0, arguments: '}' });
    expect(sent).toEqual([
      { call_id: 'call_a', tool: 'search', delta: '{"q":"x"' },
      { call_id: 'call_a', tool: 'search', delta: '}' },
    ]);
  });

  it('short arguments are not streamed (their tool_start carries them); once a call reaches the threshold, what was held leaves as one delta and every later piece as it comes', () => {
    const sent: EventData<'tool_call_delta'>[] = [];
    const relay = toolCallDeltaRelay((data) => sent.push(data), 10);
    relay({ index: 0, id: 'call_short', name: 'search', arguments: '{"q":"x"}' });
    relay({ index: 1, id: 'call_long', name: 'write', arguments: '{"text":' });
    expect(sent).toEqual([]);
    relay({ index: 1, arguments: '"abc' });
    relay({ index: 1, arguments: 'd"}' });
    expect(sent).toEqual([
      { call_id: 'call_long', tool: 'write', delta: '{"text":"abc' },
      { call_id: 'call_long', tool: 'write', delta: 'd"}' },
    ]);
    expect(sent.map((data) => data.delta).join('')).toBe('{"text":"abcd"}');
  });
});
