/**
 * Scrubs text that arrives in pieces, like the deltas of a streamed model answer, where a secret may be
 * split across two or more pieces. Each piece is let through up to where the text stops being settled
 * (see SecretMatcher.find): the end that could still grow into a secret, or an escape, is held back and
 * searched again with the next piece. For ordinary prose that end is a character or two. `end()` lets the
 * rest through, scrubbed, when no more text follows.
 */
import { cutOut } from './cut-out.js';
import type { TextRange } from './secret-matcher.js';
import type { SecretScrubber } from './secret-scrubber.js';

export class ScrubbingStream {
  #held = '';
  /** The last code unit let through, for the whole-token rule at the start of the held text. */
  #before: number | undefined;

  constructor(private readonly scrubber: SecretScrubber) {}

  /** What can be let through now (possibly ''), with secrets replaced. */
  push(piece: string): string {
    const text = this.#held + piece;
    if (text === '') return '';
    if (this.scrubber.values.size === 0) return this.#letThrough(text, text.length, []);
    const { ranges, settledUpTo } = this.scrubber.matcher.find(text, { final: false, before: this.#before });
    // A secret found whole but reaching past the settled point is held back from its start, so it is
    // found whole again with the next piece instead of being let through in two parts.
    let cut = settledUpTo;
    for (const [start, end] of ranges) if (end > settledUpTo && start < cut) cut = start;
    const clipped: TextRange[] = [];
    for (const [start, end] of ranges) if (start < cut) clipped.push([start, Math.min(end, cut)]);
    return this.#letThrough(text, cut, clipped);
  }

  /** Everything still held, scrubbed: no more text follows. Afterwards the stream starts afresh. */
  end(): string {
    const text = this.#held;
    let out = text;
    if (text !== '' && this.scrubber.values.size > 0) {
      out = cutOut(text, this.scrubber.matcher.find(text, { final: true, before: this.#before }).ranges);
    }
    this.#held = '';
    this.#before = undefined;
    return out;
  }

  #letThrough(text: string, cut: number, ranges: readonly TextRange[]): string {
    this.#held = text.slice(cut);
    if (cut > 0) this.#before = text.charCodeAt(cut - 1);
    return cutOut(text.slice(0, cut), ranges);
  }
}
