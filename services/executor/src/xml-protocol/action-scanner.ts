/**
 * Splits a model's streamed text into prose and `<ACTION>` blocks as the deltas arrive. Prose is handed
 * back as soon as it is certain not to be the start of a block: text that could still become `<ACTION`
 * (a trailing `<AC`), and the layout around blocks (blank lines, a Markdown code fence wrapping a block),
 * is held until the next delta decides. Layout next to a block is dropped with it, so what the scanner
 * hands back is the reply's prose alone. A `</ACTION>` inside a CDATA section does not end the block.
 */
import { parseActionBody, toolIdHint, type ActionParse } from './action-parser.js';

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

const ACTION_OPEN = /<action(?=[\s>/])/i;
const ACTION_OPEN_AT = /<action(?=[\s>/])/iy;
const ACTION_CLOSE_AT = /<\/action\s*>/iy;
const CDATA_OPEN = '<![CDATA[';
const CDATA_CLOSE = ']]>';
const UNDECIDED_MAX = 32;
const MAX_HELD_LAYOUT = 1024;
const PARAGRAPH_BREAK = '\n\n';
/** Inside a block, text from a `<` that may still become `</ACTION>`, `<ACTION` or `<![CDATA[`. */
const UNDECIDED_MARKUP =
  /^<(?:\/(?:a(?:c(?:t(?:i(?:o(?:n\s*)?)?)?)?)?)?|a(?:c(?:t(?:i(?:o(?:n)?)?)?)?)?|!(?:\[(?:C(?:D(?:A(?:T(?:A)?)?)?)?)?)?)?$/i;

export class ActionScanner {
  #mode: Mode = Mode.PROSE;
  /** Text not yet handed back (prose modes), or the block's text not yet searched through (block mode). */
  #pending = '';
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
    const open = ACTION_OPEN.exec(this.#pending);
    if (open) {
      const before = this.#pending.slice(0, open.index);
      const prose = before.slice(0, layoutStart(before, { partialTag: false }));
      this.#startBlock(this.#pending.slice(open.index));
      return { out: this.#paragraph(prose), more: true };
    }
    if (final) {
      const out = this.#pending;
      this.#pending = '';
      return { out: this.#paragraph(out), more: false };
    }
    // Held: what may still turn out to lead into a block (layout, an opening fence, a partial `<ACTION`).
    const held = layoutStart(this.#pending, { partialTag: true });
    const out = this.#pending.slice(0, held);
    this.#pending = this.#pending.slice(held);
    return { out: this.#paragraph(out), more: false };
  }

  #paragraph(prose: string): string {
    if (prose === '' || !this.#paragraphOwed) return prose;
    this.#paragraphOwed = false;
    return `${PARAGRAPH_BREAK}${prose}`;
  }

  /** After `</ACTION>`: blank space and a closing code fence belong to the block's layout. */
  #skipLayoutAfterBlock(final: boolean): { out: string; more: boolean } {
    const text = this.#pending.replace(/^\s+/, '');
    const fence = /^```[ \t]*(?:\r?\n|$)/.exec(text);
    if (fence && (final || fence[0].endsWith('\n'))) {
      this.#pending = text.slice(fence[0].length);
      return { out: '', more: true };
    }
    if (text === '' || (!final && /^`{1,3}[ \t]*$/.test(text))) {
      this.#pending = text;
      return { out: '', more: false };
    }
    this.#pending = text;
    this.#mode = Mode.PROSE;
    // Prose on both sides of a block stays two paragraphs rather than running together.
    this.#paragraphOwed = this.#prose !== '';
    return { out: '', more: true };
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
      if (gt < 0) {
        this.#cursor = window.length;
        return this.#needMore(final, 'the <ACTION> tag itself is not closed with ">"');
      }
      this.#bodyStart = this.#scannedLength + gt + 1;
      this.#cursor = gt + 1;
      if (window[gt - 1] === '/') {
        this.#endBlock(gt + 1, { ok: false, problem: 'the ACTION is empty (<ACTION/>)' });
        return { out: '', more: true };
      }
    }
    for (;;) {
      if (this.#inCdata) {
        const end = window.indexOf(CDATA_CLOSE, this.#cursor);
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
      if (lt < 0) {
        this.#cursor = window.length;
        return this.#needMore(final, 'the ACTION is not closed: there is no </ACTION> after it');
      }
      if (window.startsWith(CDATA_OPEN, lt)) {
        this.#inCdata = true;
        this.#cursor = lt + CDATA_OPEN.length;
        continue;
      }
      const close = matchAt(ACTION_CLOSE_AT, window, lt);
      if (close) {
        const block = this.#blockText(lt);
        const body = block.slice(this.#bodyStart);
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

/**
 * Where the layout at the end of `text` begins: trailing blank space, before it an opening code fence on
 * its own line (three backticks and a language; fewer backticks too when `partialTag`, as the fence may
 * still be arriving), and with `partialTag` a trailing `<`, `<A`, … `<ACTION` that may still become a tag.
 * Only the last MAX_HELD_LAYOUT characters are looked at: a longer blank run is handed on as prose, so a
 * model emitting endless blank space cannot make each delta cost more than that.
 */
function layoutStart(text: string, { partialTag }: { partialTag: boolean }): number {
  const floor = Math.max(0, text.length - MAX_HELD_LAYOUT);
  let at = text.length;
  if (partialTag) {
    const lt = text.lastIndexOf('<');
    if (lt >= 0 && text.length - lt <= '<action'.length && '<action'.startsWith(text.slice(lt).toLowerCase()))
      at = lt;
  }
  at = skipBlankBackwards(text, at, floor);
  const lineStart = Math.max(floor, text.lastIndexOf('\n', at - 1) + 1);
  const fence = partialTag ? /^[ \t]*`{1,3}[\w-]*[ \t]*$/ : /^[ \t]*```[\w-]*[ \t]*$/;
  if (at > lineStart && fence.test(text.slice(lineStart, at)))
    at = skipBlankBackwards(text, lineStart, floor);
  return at;
}

function skipBlankBackwards(text: string, from: number, floor: number): number {
  let at = from;
  while (at > floor && /\s/.test(text[at - 1]!)) at--;
  return at;
}
