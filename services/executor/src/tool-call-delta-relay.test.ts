import type { EventData } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { toolCallDeltaRelay } from './tool-call-delta-relay.js';

describe('relaying tool call pieces as tool_call_delta data', () => {
  it('when a call names its id and tool only on a later piece, the earlier pieces are held and leave with it; a call that never gets an id sends nothing', () => {
    const sent: EventData<'tool_call_delta'>[] = [];
    const relay = toolCallDeltaRelay((data) => sent.push(data));
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
});
