/**
 * Turns one model turn's tool call pieces (CompleteOptions.onToolCallDelta, keyed by the call's position)
 * into `tool_call_delta` events, which name the call by id and tool. A call's pieces are held until both
 * its id and its name are known (an API gives them on the first piece; a few servers later); a call whose
 * id never comes (the client makes one up when the turn is assembled) shows no deltas, only its
 * `tool_start`, which carries the arguments whole either way.
 *
 * Short arguments are not streamed at all: a call's pieces are held until they reach `minChars` (256 by
 * default), then what was held goes as one delta and every later piece as it comes. Most calls' arguments
 * are a few dozen characters that arrive within one model chunk or two, and an event for them would only
 * repeat the `tool_start` that follows at once (each event is a fenced write, a delivery to every
 * follower, and about a tenth of a one-tool task's bus cost); long arguments (a document, a script) are
 * the ones worth watching live. The deltas of a call that streamed add up to its whole arguments.
 */
import type { EventData } from '@agentmesh/protocol';
import type { CompleteOptions } from './llm/index.js';

type ToolCallPiece = Parameters<NonNullable<CompleteOptions['onToolCallDelta']>>[0];

interface CallPieces {
  id?: string;
  name?: string;
  held: string;
  /** Its arguments reached `minChars`: every piece goes on as it comes. */
  streaming: boolean;
}

/** Argument text a call must reach before its pieces are streamed. */
export const TOOL_CALL_DELTA_MIN_CHARS = 256;

export function toolCallDeltaRelay(
  emit: (data: EventData<'tool_call_delta'>) => void,
  minChars: number = TOOL_CALL_DELTA_MIN_CHARS,
): (piece: ToolCallPiece) => void {
  const calls = new Map<number, CallPieces>();
  return (piece) => {
    let call = calls.get(piece.index);
    if (call === undefined) {
      call = { held: '', streaming: false };
      calls.set(piece.index, call);
    }
    call.id ??= piece.id || undefined;
    call.name ??= piece.name || undefined;
    const delta = call.held + piece.arguments;
    if (call.id === undefined || call.name === undefined || (!call.streaming && delta.length < minChars)) {
      call.held = delta;
      return;
    }
    call.streaming = true;
    call.held = '';
    if (delta !== '') emit({ call_id: call.id, tool: call.name, delta });
  };
}
