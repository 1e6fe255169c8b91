/**
 * Finds every secret of a set in a text, in every form the scrubber covers, in one pass per view of the
 * text: as it is, with JSON escapes decoded (only when the text has a backslash), with percent escapes
 * decoded (only when it has a `%`), and form-decoded with `+` as a space (only when a value has a space and
 * the text a `%` or `+`). Every view is searched case-insensitively by the same automaton, holding every
 * value and its base64 forms (secret-forms.ts). What it returns are stretches of the original text to cut out.
 */
import { foldText, NeedleAutomaton } from './needle-automaton.js';
import { secretNeedles, type Needle } from './secret-forms.js';
import { jsonUnescapedView, PlainView, percentDecodedView, type TextView } from './text-views.js';

/** A stretch [start, end) of a text. */
export type TextRange = readonly [start: number, end: number];

export interface SecretMatches {
  /** What to cut out: sorted, overlapping and touching stretches merged. */
  readonly ranges: readonly TextRange[];
  /**
   * Text before this index is settled: nothing that may still follow can make a secret of it. From here on
   * the text may be the beginning of a secret (or of an escape); the text's length when it is final.
   */
  readonly settledUpTo: number;
}

export interface MatchOptions {
  /** Nothing follows the text: escapes and tokens end where it ends. */
  readonly final: boolean;
  /** The code unit just before the text (a stream's last one let through), for the whole-token rule. */
  readonly before?: number;
}

export class SecretMatcher {
  readonly #needles: NeedleAutomaton;
  readonly #plusIsSpace: boolean;

  constructor(values: Iterable<string>) {
    const needles: Needle[] = [];
    let spaced = false;
    for (const value of values) {
      needles.push(...secretNeedles(value));
      spaced ||= value.includes(' ');
    }
    this.#needles = new NeedleAutomaton(needles, foldText);
    this.#plusIsSpace = spaced;
  }

  get empty(): boolean {
    return this.#needles.empty;
  }

  find(text: string, { final, before }: MatchOptions): SecretMatches {
    if (this.empty) return { ranges: [], settledUpTo: text.length };
    const ranges: TextRange[] = [];
    const plainStart = before === undefined || !isWordUnit(before);
    let settled = scanView(new PlainView(text), this.#needles, plainStart, final, ranges);
    // A decoded view cannot know what the unit before the text decoded to: it counts the start as a token
    // boundary, which scrubs more rather than less.
    const scan = (view: TextView) => {
      settled = Math.min(settled, scanView(view, this.#needles, true, final, ranges));
    };
    if (text.includes('\\')) scan(jsonUnescapedView(text, final));
    const percent = text.includes('%');
    if (percent) scan(percentDecodedView(text, final, false));
    if (this.#plusIsSpace && (percent || text.includes('+'))) scan(percentDecodedView(text, final, true));
    return { ranges: mergeRanges(ranges), settledUpTo: final ? text.length : settled };
  }
}

/** Adds the view's finds to `ranges`; returns where its unsettled end begins in the original text. */
function scanView(
  view: TextView,
  automaton: NeedleAutomaton,
  startIsBoundary: boolean,
  final: boolean,
  ranges: TextRange[],
): number {
  let state = 0;
  for (let unit = 0; unit < view.length; unit++) {
    state = automaton.step(state, view.code(unit));
    for (const end of automaton.ends(state)) {
      const first = unit - end.length + 1;
      if (end.wholeToken) {
        const leftBoundary = first === 0 ? startIsBoundary : !isWordUnit(view.code(first - 1));
        if (!leftBoundary) continue;
        // At the end of a text that goes on, the right side is unknown; the unsettled end covers it.
        if (unit + 1 < view.length ? isWordUnit(view.code(unit + 1)) : !final) continue;
      }
      ranges.push([view.start(first), view.end(unit)]);
    }
  }
  const depth = automaton.depth(state);
  const open = depth > 0 ? view.start(view.length - depth) : view.incompleteFrom;
  return Math.min(open, view.incompleteFrom);
}

/** Letters, digits, `_`, and anything not ASCII (letters of other scripts). */
function isWordUnit(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code >= 0x80
  );
}

function mergeRanges(ranges: TextRange[]): TextRange[] {
  if (ranges.length <= 1) return ranges;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  const merged: [number, number][] = [];
  for (const [start, end] of sorted) {
    const last = merged.at(-1);
    if (last !== undefined && start <= last[1]) last[1] = Math.max(last[1], end);
    else merged.push([start, end]);
  }
  return merged;
}
