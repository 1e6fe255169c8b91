/**
 * Turns one model turn's tool call pieces (CompleteOptions.onToolCallDelta, keyed by the call's position)
 * into `tool_call_delta` events, which name the call by id and tool. A call's pieces are held until both
 * its id and its name are known (an API gives them on the first piece; a few servers later); a call whose
 * id never comes (the client makes one up when the turn is assembled) shows no deltas, only its
 * `tool_start`, which carries the arguments whole either way.
 */
import type { EventData } from '@agentmesh/protocol';
import type { CompleteOptions } from './llm/index.js';

type ToolCallPiece = Parameters<NonNullable<CompleteOptions['onToolCallDelta']>>[0];

interface CallPieces {
  id?: string;
  name?: string;
  held: string;
}

export function toolCallDeltaRelay(
  emit: (data: EventData<'tool_call_delta'>) => void,
): (piece: ToolCallPiece) => void {
  const calls = new Map<number, CallPieces>();
  return (piece) => {
    let call = calls.get(piece.index);
    if (call === undefined) {
      call = { held: '' };
      calls.set(piece.index, call);
    }
    call.id ??= piece.id || undefined;
    call.name ??= piece.name || undefined;
    const delta = call.held + piece.arguments;
    if (call.id === undefined || call.name === undefined) {
      call.held = delta;
      return;
    }
    call.held = '';
    if (delta !== '') emit({ call_id: call.id, tool: call.name, delta });
  };
}
