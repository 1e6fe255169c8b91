// The answer's text as the console shows it: message_chunk deltas appended, with a resumed attempt's
// attempt_started applied (the rule of @agentmesh/protocol's TaskTranscript): the text of events after
// data.drop_text_after_seq that earlier attempts wrote is void, and the new attempt streams it again.

export class AnswerText {
  constructor() {
    /** [{seq, attempt, text}] in seq order. */
    this.pieces = [];
    this.lastSeq = 0;
  }

  /**
   * Folds one event in (one at or below the last seq is ignored). Answers true when text already shown
   * became void, so the answer must be drawn again from `text`.
   */
  add(event) {
    if (event.seq <= this.lastSeq) return false;
    this.lastSeq = event.seq;
    if (event.type === 'message_chunk') {
      if (event.data.delta !== '') {
        this.pieces.push({ seq: event.seq, attempt: event.attempt, text: event.data.delta });
      }
      return false;
    }
    if (event.type !== 'attempt_started') return false;
    const after = event.data.drop_text_after_seq;
    const kept = this.pieces.filter((piece) => piece.seq <= after || piece.attempt >= event.attempt);
    const voided = kept.length !== this.pieces.length;
    this.pieces = kept;
    return voided;
  }

  get text() {
    return this.pieces.map((piece) => piece.text).join('');
  }
}
