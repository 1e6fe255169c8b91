/**
 * The ways the matcher reads a text: as it is, with JSON string escapes decoded (`\"`, `\/`, `\n`,
 * `\u00e9`, … as JSON.stringify, PHP or Python write them), and with percent escapes decoded (as
 * encodeURIComponent, form encoding or any other percent-encoder writes them, in either hex case, UTF-8
 * sequences decoded). Each
 * decoded unit remembers the stretch of the original text it came from, so a secret found in a view is
 * cut out of the original whole, escapes included.
 *
 * A text may end inside an escape (a streamed delta cut after `\u00`): the view then stops before it and
 * says where it began, so the caller holds that tail back until more text arrives.
 */

export interface TextView {
  /** Number of decoded units. */
  readonly length: number;
  code(unit: number): number;
  /** Index in the original text where the unit's source begins. */
  start(unit: number): number;
  /** Index in the original text just after the unit's source. */
  end(unit: number): number;
  /** Where an escape that the text ends in the middle of begins; the text's length when there is none. */
  readonly incompleteFrom: number;
}

/** The text as it is, one unit per UTF-16 code unit. */
export class PlainView implements TextView {
  readonly length: number;
  readonly incompleteFrom: number;

  constructor(private readonly text: string) {
    this.length = text.length;
    this.incompleteFrom = text.length;
  }

  code(unit: number): number {
    return this.text.charCodeAt(unit);
  }

  start(unit: number): number {
    return unit;
  }

  end(unit: number): number {
    return unit + 1;
  }
}

/** A view built unit by unit. */
class DecodedView implements TextView {
  readonly #codes: number[] = [];
  readonly #starts: number[] = [];
  readonly #ends: number[] = [];
  incompleteFrom: number;

  constructor(textLength: number) {
    this.incompleteFrom = textLength;
  }

  get length(): number {
    return this.#codes.length;
  }

  push(code: number, start: number, end: number): void {
    this.#codes.push(code);
    this.#starts.push(start);
    this.#ends.push(end);
  }

  code(unit: number): number {
    return this.#codes[unit] ?? 0;
  }

  start(unit: number): number {
    return this.#starts[unit] ?? 0;
  }

  end(unit: number): number {
    return this.#ends[unit] ?? 0;
  }
}

const BACKSLASH = 0x5c;
const PERCENT = 0x25;
const PLUS = 0x2b;
const SPACE = 0x20;

const SHORT_ESCAPES: ReadonlyMap<number, number> = new Map([
  [0x22, 0x22], // \"
  [0x5c, 0x5c], // \\
  [0x2f, 0x2f], // \/
  [0x62, 0x08], // \b
  [0x66, 0x0c], // \f
  [0x6e, 0x0a], // \n
  [0x72, 0x0d], // \r
  [0x74, 0x09], // \t
]);

/** UTF-16 units with JSON string escapes decoded; anything that is not a valid escape is kept as it is. */
export function jsonUnescapedView(text: string, final: boolean): TextView {
  const view = new DecodedView(text.length);
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== BACKSLASH) {
      view.push(c, i, i + 1);
      i += 1;
      continue;
    }
    const next = i + 1 < text.length ? text.charCodeAt(i + 1) : -1;
    if (next === -1 && !final) {
      view.incompleteFrom = i;
      break;
    }
    const short = SHORT_ESCAPES.get(next);
    if (short !== undefined) {
      view.push(short, i, i + 2);
      i += 2;
      continue;
    }
    if (next === 0x75 /* u */) {
      const digits = hexRun(text, i + 2, 4);
      if (digits === 4) {
        view.push(Number.parseInt(text.slice(i + 2, i + 6), 16), i, i + 6);
        i += 6;
        continue;
      }
      if (!final && i + 2 + digits === text.length) {
        view.incompleteFrom = i;
        break;
      }
    }
    view.push(c, i, i + 1);
    i += 1;
  }
  return view;
}

/**
 * UTF-16 units with percent escapes decoded (and `+` as a space, with `plusIsSpace`): escaped bytes that
 * form UTF-8 sequences become the characters they encode; an escaped byte that does not is kept as the
 * character of that code (it matches no secret, but is not lost). Characters that are not escaped are
 * kept as they are.
 */
export function percentDecodedView(text: string, final: boolean, plusIsSpace: boolean): TextView {
  const view = new DecodedView(text.length);
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== PERCENT) {
      view.push(plusIsSpace && c === PLUS ? SPACE : c, i, i + 1);
      i += 1;
      continue;
    }
    const first = escapedByte(text, i);
    if (first === undefined) {
      if (!final && i + 1 + hexRun(text, i + 1, 2) === text.length) {
        view.incompleteFrom = i;
        break;
      }
      view.push(c, i, i + 1);
      i += 1;
      continue;
    }
    const length = utf8SequenceLength(first);
    const sequence = [first];
    while (sequence.length < length) {
      const next = escapedByte(text, i + 3 * sequence.length);
      if (next === undefined || (next & 0xc0) !== 0x80) break;
      sequence.push(next);
    }
    if (sequence.length < length && !final && isCutShort(text, i + 3 * sequence.length)) {
      view.incompleteFrom = i;
      break;
    }
    const end = i + 3 * sequence.length;
    const decoded = sequence.length === length && length > 1 ? Buffer.from(sequence).toString('utf8') : '';
    if (decoded.length > 0 && !decoded.includes('\ufffd')) {
      for (let unit = 0; unit < decoded.length; unit++) view.push(decoded.charCodeAt(unit), i, end);
      i = end;
    } else {
      view.push(first, i, i + 3);
      i += 3;
    }
  }
  return view;
}

/** The byte a `%XX` escape at `at` stands for, if there is one. */
function escapedByte(text: string, at: number): number | undefined {
  if (text.charCodeAt(at) !== PERCENT || hexRun(text, at + 1, 2) < 2) return undefined;
  return Number.parseInt(text.slice(at + 1, at + 3), 16);
}

/** Whether the text ends at `at` or inside an escape begun there (more of a sequence may follow). */
function isCutShort(text: string, at: number): boolean {
  return (
    at >= text.length || (text.charCodeAt(at) === PERCENT && at + 1 + hexRun(text, at + 1, 2) === text.length)
  );
}

/** Bytes in the UTF-8 sequence a lead byte begins (1 for ASCII and for bytes that cannot lead). */
function utf8SequenceLength(lead: number): number {
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  if (lead >= 0xe0) return lead <= 0xef ? 3 : 1;
  if (lead >= 0xc2) return 2;
  return 1;
}

/** How many hex digits (at most `max`) follow from `from`. */
function hexRun(text: string, from: number, max: number): number {
  let count = 0;
  while (count < max && from + count < text.length && isHexDigit(text.charCodeAt(from + count))) count++;
  return count;
}

function isHexDigit(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}
