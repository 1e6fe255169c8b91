/**
 * Follows streamed prose one character at a time and knows, at any moment, where the layout at its end
 * begins: trailing blank space, before it an opening code fence on its own line, and a trailing `<`, `<A`,
 * … `<ACTION` that may still become a tag. It also spots a complete `<ACTION` opening tag. Each character
 * is looked at once, whatever the size of the deltas: the answers come from what was recorded on the way,
 * never from searching back through text already seen (that search, repeated on every delta over held
 * blank text, is what made the scanner slow on long blank runs).
 */

const TAG = '<action';

/** How far a line is into the shape of an opening code fence: `[ \t]*`, one to three backticks, a language. */
const Fence = {
  INDENT: 0,
  TICKS_1: 1,
  TICKS_2: 2,
  TICKS_3: 3,
  LANGUAGE_AFTER_1_OR_2: 4,
  LANGUAGE_AFTER_3: 5,
  BLANK_AFTER: 6,
  NOT_A_FENCE: 7,
} as const;
type Fence = (typeof Fence)[keyof typeof Fence];

/** What is known about the text up to its last non-blank character. */
class ContentEnd {
  /** Just after the last non-blank character (0 if there is none). */
  end = 0;
  /** Where that character's line has its first backtick (-1 if none): where a fence would start. */
  ticksAt = -1;
  /** Where the blank run ending at that line's start begins (the line break and blank lines before it). */
  blankBeforeLine = 0;
  /** The line, up to that character, read as a fence. */
  fence: Fence = Fence.INDENT;

  copy(from: ContentEnd): void {
    this.end = from.end;
    this.ticksAt = from.ticksAt;
    this.blankBeforeLine = from.blankBeforeLine;
    this.fence = from.fence;
  }
}

const LT = 0x3c;
const NEWLINE = 0x0a;
const BACKTICK = 0x60;

export class ProseLayout {
  #length = 0;
  /** Start of the blank run the text ends with (its length when it ends in a non-blank character). */
  #blankFrom = 0;
  #lineTicksAt = -1;
  #blankBeforeLine = 0;
  #lineFence: Fence = Fence.INDENT;
  readonly #content = new ContentEnd();
  /** The last `<`, how many characters from it match `<action`, and what preceded it. */
  #tagStart = -1;
  #tagMatched = 0;
  readonly #beforeTag = new ContentEnd();
  #opened = false;

  /** Characters followed so far. */
  get length(): number {
    return this.#length;
  }

  /**
   * Follows `text` up to a complete `<ACTION` opening tag (`<action` and a blank, `>` or `/`). Returns how
   * many characters of `text` were followed: all of them, or up to the character after the tag, where
   * the tag is known to open a block (`openedAt` then tells where the tag starts).
   */
  follow(text: string): number {
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      const blank = isBlankCode(code, text, i);
      if (this.#tagMatched === TAG.length && (blank || code === 0x3e /* > */ || code === 0x2f) /* / */) {
        this.#opened = true;
        return i;
      }
      if (code === LT) {
        this.#tagStart = this.#length;
        this.#tagMatched = 1;
        this.#beforeTag.copy(this.#content);
      } else if (this.#tagMatched > 0) {
        const matches = this.#tagMatched < TAG.length && text[i]!.toLowerCase() === TAG[this.#tagMatched];
        this.#tagMatched = matches ? this.#tagMatched + 1 : 0;
      }
      this.#followLine(code, text, i, blank);
      this.#length++;
    }
    return text.length;
  }

  /** Where the `<ACTION` tag that stopped `follow` starts, or -1. */
  get openedAt(): number {
    return this.#opened ? this.#tagStart : -1;
  }

  /**
   * Where the layout at the end begins. With `partialTag`, a trailing prefix of `<ACTION` counts as layout
   * and the fence may still be arriving (one to three backticks); without, the text is what precedes an
   * opening tag and a fence needs its three backticks. Only text from `floor` on is layout: a fence whose
   * backticks come before it is not one.
   */
  start({ partialTag, floor }: { partialTag: boolean; floor: number }): number {
    const content = this.#tagMatched > 0 ? this.#beforeTag : this.#content;
    if (content.end === 0) return floor;
    const fence = isFence(content.fence, partialTag) && content.ticksAt >= floor;
    return Math.max(floor, fence ? content.blankBeforeLine : content.end);
  }

  #followLine(code: number, text: string, i: number, blank: boolean): void {
    const at = this.#length;
    if (code === NEWLINE) {
      this.#lineTicksAt = -1;
      this.#blankBeforeLine = this.#blankFrom;
      this.#lineFence = Fence.INDENT;
      return;
    }
    if (this.#lineFence !== Fence.NOT_A_FENCE) {
      if (this.#lineFence === Fence.INDENT && code === BACKTICK) this.#lineTicksAt = at;
      this.#lineFence = nextFence(this.#lineFence, text[i]!, blank);
    }
    if (blank) return;
    this.#blankFrom = at + 1;
    const content = this.#content;
    content.end = at + 1;
    content.ticksAt = this.#lineTicksAt;
    content.blankBeforeLine = this.#blankBeforeLine;
    content.fence = this.#lineFence;
  }
}

function isFence(fence: Fence, partial: boolean): boolean {
  if (fence === Fence.TICKS_3 || fence === Fence.LANGUAGE_AFTER_3) return true;
  return (
    partial && (fence === Fence.TICKS_1 || fence === Fence.TICKS_2 || fence === Fence.LANGUAGE_AFTER_1_OR_2)
  );
}

function nextFence(fence: Fence, ch: string, blank: boolean): Fence {
  switch (fence) {
    case Fence.INDENT:
      if (ch === ' ' || ch === '\t') return Fence.INDENT;
      return ch === '`' ? Fence.TICKS_1 : Fence.NOT_A_FENCE;
    case Fence.TICKS_1:
    case Fence.TICKS_2:
    case Fence.TICKS_3:
      if (ch === '`') return fence === Fence.TICKS_3 ? Fence.NOT_A_FENCE : ((fence + 1) as Fence);
      if (blank) return Fence.BLANK_AFTER;
      if (!isLanguageCharacter(ch)) return Fence.NOT_A_FENCE;
      return fence === Fence.TICKS_3 ? Fence.LANGUAGE_AFTER_3 : Fence.LANGUAGE_AFTER_1_OR_2;
    case Fence.LANGUAGE_AFTER_1_OR_2:
    case Fence.LANGUAGE_AFTER_3:
      if (blank) return Fence.BLANK_AFTER;
      return isLanguageCharacter(ch) ? fence : Fence.NOT_A_FENCE;
    case Fence.BLANK_AFTER:
      return blank ? Fence.BLANK_AFTER : Fence.NOT_A_FENCE;
    default:
      return Fence.NOT_A_FENCE;
  }
}

function isLanguageCharacter(ch: string): boolean {
  return /^[\w-]$/.test(ch);
}

const BLANK = /^\s$/;

/** A character `\s` matches, with the ASCII cases answered without a regular expression. */
export function isBlank(ch: string): boolean {
  return isBlankCode(ch.charCodeAt(0), ch, 0);
}

function isBlankCode(code: number, text: string, at: number): boolean {
  if (code < 128) return code === 32 || (code >= 9 && code <= 13);
  return BLANK.test(text[at]!);
}
