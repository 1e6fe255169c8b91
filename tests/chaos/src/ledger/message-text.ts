/**
 * The answer a client sees when it appends a task's `message_chunk`s, folded from the protocol's rule
 * for `attempt_started` (libs/protocol events.ts): when an attempt takes over, the text that earlier
 * attempts wrote after `drop_text_after_seq` is void, because the new attempt streams it again. The
 * fold is written here from that definition, not borrowed from the client SDK, so the ledger judges the
 * SDK's promise rather than repeating it.
 */
import type { TaskEvent } from '@agentmesh/protocol';

interface TextPiece {
  seq: number;
  attempt: number;
  delta: string;
}

/** Appended `message_chunk` deltas of `events` (in stored order), after every `attempt_started` is applied. */
export function appendedMessageText(events: readonly TaskEvent[]): string {
  let pieces: TextPiece[] = [];
  for (const event of events) {
    if (event.type === 'attempt_started') {
      const { drop_text_after_seq: keepUpTo } = event.data;
      pieces = pieces.filter((piece) => piece.seq <= keepUpTo || piece.attempt >= event.attempt);
    } else if (event.type === 'message_chunk') {
      pieces.push({ seq: event.seq, attempt: event.attempt, delta: event.data.delta });
    }
  }
  return pieces.map((piece) => piece.delta).join('');
}
