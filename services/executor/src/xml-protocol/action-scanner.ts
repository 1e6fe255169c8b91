/**
 * Splits a model's streamed text into prose and `<ACTION>` blocks as the deltas arrive. Prose is handed
 * back as soon as it is certain not to be the start of a block: text that could still become `<ACTION`
 * (a trailing `<AC`), and the layout around blocks (blank lines, a Markdown code fence wrapping a block),
 * is held until the next delta decides. Layout next to a block is dropped with it, so what the scanner
 * hands back is the reply's prose alone. A `</ACTION>` inside a CDATA section does not end the block.
 * The work is linear in the reply however it is cut: text held back is never searched again on the next
 * delta (`charactersExamined` counts the work, so tests hold it to that without a clock).
 */
import { parseActionBody, toolIdHint, type ActionParse } from './action-parser.js';
import { isBlank, ProseLayout } from './prose-layout.js';
import { TextQueue } from './text-queue.js';

export type ScannedAction = ActionParse & {
  /** The block as the model wrote it, from `<ACTION` through `</ACTION>` (or as far as it went). */
  readonly raw: string;
};

export interface ScannedReply {
  /** Everything handed back as prose, in order. */
  readonly prose: string;
  readonly actions: readonly ScannedAction[];
}

const Mode = { PROSE: 'prose', AFTER_BLOCK: 'after_block', BLOCK: 'block' } as const;
type Mode = (typeof Mode)[keyof typeof Mode];

const ACTION_OPEN_AT = /<action(?=[\s>/])/iy;
const ACTION_CLOSE_AT = /<\/action\s*>/iy;
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';
const FENCE = '```';
const UNDECIDED_MAX = 32;
const MAX_HELD_LAYOUT = 1024;
const PARAGRAPH_BREAK = '\n\n';
/** Inside a block, text from a `<` that may still become `</ACTION>`, `<ACTION` or `<![CDATA[`. */
const UNDECIDED_MARKUP =
  /^<(?:\/(?:a(?:c(?:t(?:i(?:o(?:n\s*)?)?)?)?)?)?|a(?:c(?:t(?:i(?:o(?:n)?)?)?)?)?|!(?:\[(?:C(?:D(?:A(?:T(?:A)?)?)?)?)?)?)?$/i;

export class ActionScanner {
  #mode: Mode = Mode.PROSE;
  /** Text not yet looked at (prose modes), or the block's text not yet searched through (block mode). */
  #pending = '';
  /** Prose mode: the prose followed so far, and what of it is held back as layout (from `#heldFrom` on). */
  #layout = new ProseLayout();
  #held = new TextQueue();
  #heldFrom = 0;
  /** After a block: a closing fence that may still be arriving (backticks, then blank space). */
  #fenceHeld = '';
  #fenceTicks = 0;
  #fenceBlank = false;
  /** The held fence ends in `\r`: only `\n` can complete it. */
  #fenceReturn = false;
  #examined = 0;
  /** Block mode: the block's text already searched, from `<ACTION` on. */
  #scanned: string[] = [];
  #scannedLength = 0;
  /** Block mode: where the block's body starts (after `<ACTION…>`), or -1 before its `>` has arrived. */
  #bodyStart = -1;
  /** Block mode: how far `#pending` has been searched. */
  #cursor = 0;
  #inCdata = false;
  #prose = '';
  /** Prose resumes after a block that followed earlier prose: it starts a new paragraph. */
  #paragraphOwed = false;
  readonly #actions: ScannedAction[] = [];
  #finished = false;

  /** Takes the next delta; returns the prose that can be handed on now (possibly ''). */
  push(delta: string): string {
    if (this.#finished) throw new Error('ActionScanner.push after finish');
    this.#pending += delta;
    return this.#drain(false);
  }

  /** The reply is complete: returns the prose still held, and settles an unclosed block as a problem. */
  finish(): string {
    if (this.#finished) return '';
    const prose = this.#drain(true);
    this.#finished = true;
    return prose;
  }

  get prose(): string {
    return this.#prose;
  }

  get actions(): readonly ScannedAction[] {
    return this.#actions;
  }

  /**
   * How many characters the scanner has looked at so far, each search counting the stretch it covered: a
   * measure of its work that, unlike a clock, does not depend on the machine or its load.
   */
  get charactersExamined(): number {
    return this.#examined;
  }

  #drain(final: boolean): string {
    let out = '';
    for (;;) {
      const step =
        this.#mode === Mode.BLOCK
          ? this.#scanBlock(final)
          : this.#mode === Mode.AFTER_BLOCK
            ? this.#skipLayoutAfterBlock(final)
            : this.#scanProse(final);
      out += step.out;
      this.#prose += step.out;
      if (!step.more) break;
    }
    return out;
  }

  #scanProse(final: boolean): { out: string; more: boolean } {
    const text = this.#pending;
    const followed = this.#layout.follow(text);
    this.#examined += followed;
    this.#held.append(text.slice(0, followed));
    this.#pending = '';
    const open = this.#layout.openedAt;
    if (open >= 0) {
      const prose = this.#takeHeld(this.#layoutStart(open, { partialTag: false }));
      this.#takeHeld(open);
      this.#startBlock(this.#held.takeAll() + text.slice(followed));
      this.#startProse();
      return { out: this.#paragraph(prose), more: true };
    }
    if (final) return { out: this.#paragraph(this.#held.takeAll()), more: false };
    // Held: what may still turn out to lead into a block (layout, an opening fence, a partial `<ACTION`).
    const end = this.#layout.length;
    return {
      out: this.#paragraph(this.#takeHeld(this.#layoutStart(end, { partialTag: true }))),
      more: false,
    };
  }

  /**
   * Where the layout before `end` begins, counting no further back than MAX_HELD_LAYOUT characters: a
   * longer blank run is handed on as prose, so endless blank space is not held.
   */
  #layoutStart(end: number, { partialTag }: { partialTag: boolean }): number {
    const floor = Math.max(end - MAX_HELD_LAYOUT, this.#heldFrom);
    return this.#layout.start({ partialTag, floor });
  }

  /** Hands on the held prose before `until`. */
  #takeHeld(until: number): string {
    const prose = this.#held.take(until - this.#heldFrom);
    this.#heldFrom = until;
    return prose;
  }

  #startProse(): void {
    this.#layout = new ProseLayout();
    this.#held = new TextQueue();
    this.#heldFrom = 0;
  }

  #paragraph(prose: string): string {
    if (prose === '' || !this.#paragraphOwed) return prose;
    this.#paragraphOwed = false;
    return `${PARAGRAPH_BREAK}${prose}`;
  }

  /**
   * After `</ACTION>`: blank space and a closing code fence belong to the block's layout. A fence that may
   * still be arriving is held aside, so the next delta is looked at from where this one ended.
   */
  #skipLayoutAfterBlock(final: boolean): { out: string; more: boolean } {
    const text = this.#pending;
    let start = 0;
    if (this.#fenceTicks === 0) {
      while (start < text.length && isBlank(text[start]!)) start++;
      this.#examined += start;
    }
    for (let at = start; at < text.length; at++) {
      this.#examined++;
      const ch = text[at]!;
      if (this.#fenceReturn) {
        if (ch !== '\n') return this.#proseAfterBlock(text.slice(start));
        this.#pending = text.slice(at + 1);
        this.#dropHeldFence();
        return { out: '', more: true };
      }
      if (ch === '`' && !this.#fenceBlank && this.#fenceTicks < FENCE.length) {
        this.#fenceTicks++;
      } else if ((ch === ' ' || ch === '\t') && this.#fenceTicks > 0) {
        this.#fenceBlank = true;
      } else if (
        this.#fenceTicks === FENCE.length &&
        (ch === '\n' || (ch === '\r' && text[at + 1] === '\n'))
      ) {
        // A closing fence: dropped with the block, and blank space may follow again.
        this.#pending = text.slice(at + (ch === '\r' ? 2 : 1));
        this.#dropHeldFence();
        return { out: '', more: true };
      } else if (this.#fenceTicks === FENCE.length && ch === '\r' && at + 1 === text.length && !final) {
        this.#fenceReturn = true; // `\r\n` split across deltas
      } else {
        return this.#proseAfterBlock(text.slice(start));
      }
    }
    this.#pending = '';
    if (this.#fenceTicks === 0) return { out: '', more: false };
    if (!final) {
      this.#fenceHeld += text.slice(start);
      return { out: '', more: false };
    }
    if (this.#fenceTicks === FENCE.length && !this.#fenceReturn) {
      this.#dropHeldFence();
      return { out: '', more: false };
    }
    return this.#proseAfterBlock(text.slice(start));
  }

  /** Not layout after all: the held fence and the text from `rest` on are prose. */
  #proseAfterBlock(rest: string): { out: string; more: boolean } {
    this.#pending = this.#fenceHeld + rest;
    this.#dropHeldFence();
    this.#mode = Mode.PROSE;
    // Prose on both sides of a block stays two paragraphs rather than running together.
    this.#paragraphOwed = this.#prose !== '';
    return { out: '', more: true };
  }

  #dropHeldFence(): void {
    this.#fenceHeld = '';
    this.#fenceTicks = 0;
    this.#fenceBlank = false;
    this.#fenceReturn = false;
  }

  #startBlock(text: string): void {
    this.#mode = Mode.BLOCK;
    this.#pending = text;
    this.#scanned = [];
    this.#scannedLength = 0;
    this.#bodyStart = -1;
    this.#cursor = 0;
    this.#inCdata = false;
  }

  /**
   * Searches the block's unscanned window for its end. Text searched without finding it moves out of the
   * window into `#scanned`, so each delta is searched once however long the block grows.
   */
  #scanBlock(final: boolean): { out: string; more: boolean } {
    const window = this.#pending;
    if (this.#bodyStart < 0) {
      const gt = window.indexOf('>', this.#cursor);
      this.#examined += (gt < 0 ? window.length : gt + 1) - this.#cursor;
      if (gt < 0) {
        this.#cursor = window.length;
        return this.#needMore(final, 'the <ACTION> tag itself is not closed with ">"');
      }
      this.#bodyStart = this.#scannedLength + gt + 1;
      this.#cursor = gt + 1;
      // The `/` of `<ACTION/>` may have come in an earlier delta, already moved out of the window.
      const beforeGt = gt > 0 ? window[gt - 1] : this.#scanned.at(-1)?.at(-1);
      if (beforeGt === '/') {
        this.#endBlock(gt + 1, { ok: false, problem: 'the ACTION is empty (<ACTION/>)' });
        return { out: '', more: true };
      }
    }
    for (;;) {
      if (this.#inCdata) {
        const end = window.indexOf(CDATA_CLOSE, this.#cursor);
        this.#examined += (end < 0 ? window.length : end + CDATA_CLOSE.length) - this.#cursor;
        if (end < 0) {
          // `]]>` may be arriving split: look again from the last two characters.
          this.#cursor = Math.max(this.#cursor, window.length - (CDATA_CLOSE.length - 1));
          return this.#needMore(
            final,
            'the reply ended inside a <![CDATA[ section that has no ]]>, so </ACTION> was never reached',
          );
        }
        this.#cursor = end + CDATA_CLOSE.length;
        this.#inCdata = false;
        continue;
      }
      const lt = window.indexOf('<', this.#cursor);
      this.#examined += (lt < 0 ? window.length : lt + 1) - this.#cursor;
      if (lt < 0) {
        this.#cursor = window.length;
        return this.#needMore(final, 'the ACTION is not closed: there is no </ACTION> after it');
      }
      // The markup at `<` is read from a short stretch (a longer blank run inside `</ACTION >` is searched
      // again, and counted, by the next search for `<`).
      this.#examined += Math.min(window.length - lt, UNDECIDED_MAX);
      if (window.startsWith(CDATA_OPEN, lt)) {
        this.#inCdata = true;
        this.#cursor = lt + CDATA_OPEN.length;
        continue;
      }
      const close = matchAt(ACTION_CLOSE_AT, window, lt);
      if (close) {
        const block = this.#blockText(lt);
        const body = block.slice(this.#bodyStart);
        this.#examined += body.length;
        this.#endBlock(lt + close[0].length, parseActionBody(body));
        return { out: '', more: true };
      }
      if (matchAt(ACTION_OPEN_AT, window, lt)) {
        const problem = 'the ACTION is not closed: a new <ACTION> begins before its </ACTION>';
        const raw = this.#blockText(lt);
        this.#record(raw, withHint({ ok: false, problem }, raw));
        this.#startBlock(window.slice(lt));
        return { out: '', more: true };
      }
      if (!final && window.length - lt < UNDECIDED_MAX && UNDECIDED_MARKUP.test(window.slice(lt))) {
        this.#cursor = lt;
        return this.#needMore(final, '');
      }
      this.#cursor = lt + 1;
    }
  }

  /** The block runs past what has arrived: wait for more, or at the end report it unclosed. */
  #needMore(final: boolean, problem: string): { out: string; more: boolean } {
    if (final) {
      const raw = this.#blockText(this.#pending.length);
      this.#record(raw, withHint({ ok: false, problem }, raw));
      this.#pending = '';
      this.#mode = Mode.PROSE;
      return { out: '', more: false };
    }
    if (this.#cursor > 0) {
      this.#scanned.push(this.#pending.slice(0, this.#cursor));
      this.#scannedLength += this.#cursor;
      this.#pending = this.#pending.slice(this.#cursor);
      this.#cursor = 0;
    }
    return { out: '', more: false };
  }

  /** The block from `<ACTION` up to `end` in the window. */
  #blockText(end: number): string {
    return this.#scanned.join('') + this.#pending.slice(0, end);
  }

  #endBlock(end: number, parse: ActionParse): void {
    this.#record(this.#blockText(end), parse);
    this.#pending = this.#pending.slice(end);
    this.#scanned = [];
    this.#scannedLength = 0;
    this.#mode = Mode.AFTER_BLOCK;
  }

  #record(raw: string, parse: ActionParse): void {
    this.#actions.push({ ...parse, raw });
  }
}

/** Scans a whole reply at once. */
export function scanReply(text: string): ScannedReply {
  const scanner = new ActionScanner();
  scanner.push(text);
  scanner.finish();
  return { prose: scanner.prose, actions: scanner.actions };
}

function withHint(parse: ActionParse & { ok: false }, raw: string): ActionParse {
  const toolId = toolIdHint(raw);
  return toolId === undefined ? parse : { ...parse, toolId };
}

function matchAt(pattern: RegExp, text: string, at: number): RegExpExecArray | null {
  pattern.lastIndex = at;
  return pattern.exec(text);
}
