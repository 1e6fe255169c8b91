/**
 * One call of a model adapter as the native adapters' tests read it: every piece it hands on (text,
 * reasoning, tool-call arguments) and the requests the recording server got during the call.
 */
import type { ChatRequest, ChatResult, CompleteOptions } from '../../llm/chat-types.js';

export type ToolCallPiece = Parameters<NonNullable<CompleteOptions['onToolCallDelta']>>[0];

export async function callCollecting<R>(
  model: { complete(request: ChatRequest, options: CompleteOptions): Promise<ChatResult> },
  request: ChatRequest,
  server: { readonly requests: readonly R[] },
) {
  const content: string[] = [];
  const reasoning: string[] = [];
  const toolCallDeltas: ToolCallPiece[] = [];
  const before = server.requests.length;
  const result = await model.complete(request, {
    onContentDelta: (d) => content.push(d),
    onReasoningDelta: (d) => reasoning.push(d),
    onToolCallDelta: (d) => toolCallDeltas.push(d),
  });
  return { result, content, reasoning, toolCallDeltas, sent: server.requests.slice(before) };
}

/** The calls the pieces add up to: id and name from the first piece of each, the arguments joined. */
export function callsOfPieces(pieces: readonly ToolCallPiece[]) {
  const calls: { id?: string; name?: string; arguments: string }[] = [];
  for (const piece of pieces) {
    const call = (calls[piece.index] ??= { arguments: '' });
    if (call.arguments === '' && call.id === undefined) {
      if (piece.id !== undefined) call.id = piece.id;
      if (piece.name !== undefined) call.name = piece.name;
    }
    call.arguments += piece.arguments;
  }
  return calls;
}
