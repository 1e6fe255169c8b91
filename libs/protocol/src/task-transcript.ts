/**
 * The text a task's events add up to, with `attempt_started` applied: the executable form of the rule in
 * events.ts (AttemptStartedData), so every client (SDK, CLI, gateway façades, tests) folds events the
 * same way. Pure: no I/O, no clock.
 *
 * The rule: an `attempt_started` event of attempt N voids the text (`message_chunk` answer text,
 * `tool_thinking` reasoning) of every event with `seq > drop_text_after_seq` that an earlier attempt
 * (`attempt < N`) wrote. Text of attempt N itself, and text at or below the seq, stands.
 */
import { EventType, type TaskEvent } from './events.js';

/** One event's text, kept with what the rule needs to void it later. */
interface TextPiece {
  seq: number;
  attempt: number;
  text: string;
}

/** The text an `attempt_started` event took back, newest last (the tail of each channel's text). */
export interface VoidedText {
  answer: string;
  reasoning: string;
}

/** One channel of text (answer or reasoning) as pieces in seq order. */
class TextChannel {
  private readonly pieces: TextPiece[] = [];
  private joined: string | undefined = '';

  append(piece: TextPiece): void {
    if (piece.text === '') return;
    this.pieces.push(piece);
    if (this.joined !== undefined) this.joined += piece.text;
  }

  /** Drops earlier attempts' pieces above `afterSeq`; answers their text. */
  void(afterSeq: number, attempt: number): string {
    // Pieces are in seq order and all predate the attempt_started event, so what goes is a tail; the
    // attempt check still keeps a (malformed) piece of the new attempt itself.
    let voided = '';
    let kept = 0;
    for (const piece of this.pieces) {
      if (piece.seq > afterSeq && piece.attempt < attempt) voided += piece.text;
      else this.pieces[kept++] = piece;
    }
    if (voided === '') return '';
    this.pieces.length = kept;
    this.joined = undefined;
    return voided;
  }

  text(): string {
    this.joined ??= this.pieces.map((piece) => piece.text).join('');
    return this.joined;
  }
}

export class TaskTranscript {
  private readonly answerText = new TextChannel();
  private readonly reasoningText = new TextChannel();
  private lastSeq = 0;

  /**
   * Folds one event in. Events at or below the last seq folded are ignored (a replay after a reconnect),
   * so the caller may pass every event it receives. Answers the text voided when the event is an
   * `attempt_started`, undefined for any other event.
   */
  add(event: TaskEvent): VoidedText | undefined {
    if (event.seq <= this.lastSeq) return undefined;
    this.lastSeq = event.seq;
    const piece = { seq: event.seq, attempt: event.attempt };
    switch (event.type) {
      case EventType.MESSAGE_CHUNK:
        this.answerText.append({ ...piece, text: event.data.delta });
        return undefined;
      case EventType.TOOL_THINKING:
        this.reasoningText.append({ ...piece, text: event.data.delta });
        return undefined;
      case EventType.ATTEMPT_STARTED: {
        const { drop_text_after_seq: afterSeq } = event.data;
        return {
          answer: this.answerText.void(afterSeq, event.attempt),
          reasoning: this.reasoningText.void(afterSeq, event.attempt),
        };
      }
      default:
        return undefined;
    }
  }

  /** The appended `message_chunk` text that stands. */
  get answer(): string {
    return this.answerText.text();
  }

  /** The appended `tool_thinking` text that stands. */
  get reasoning(): string {
    return this.reasoningText.text();
  }

  /** The seq of the last event folded in (0 before the first). */
  get seq(): number {
    return this.lastSeq;
  }
}
