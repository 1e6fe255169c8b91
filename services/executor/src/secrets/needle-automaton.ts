/**
 * An Aho–Corasick automaton over case-folded code units: one pass over a text finds every needle ending
 * at every position, however many needles there are, so the cost of scrubbing grows with the text and not
 * with the number of secrets or of their forms. The automaton's state after a text also tells how much of
 * the text's end could still be the beginning of a needle: what a stream must hold back.
 */
import type { Needle } from './secret-forms.js';

/** Maps a code unit to the one it is compared as. */
export type Fold = (code: number) => number;

/** A needle that ends at a position. */
export interface NeedleEnd {
  readonly length: number;
  readonly wholeToken: boolean;
}

const ROOT = 0;
/** No state: a missing child or sibling. */
const NONE = -1;
const ASCII = 128;
// Not frozen: a frozen array takes a slower path through the for-of of every scanned character.
const NO_ENDS: readonly NeedleEnd[] = [];

/**
 * The states in flat arrays, a few bytes each: a task holds one automaton for its whole run, with a state
 * per character of every form of every secret (hundreds per secret), and a Map per state made that about
 * 100 KiB per task. A state's children are a sibling list; the root's, which most characters of ordinary
 * text lead back to, are also indexed (ASCII in an array, the rest in a Map).
 */
export class NeedleAutomaton {
  readonly #firstChild: Int32Array;
  readonly #nextSibling: Int32Array;
  readonly #code: Int32Array;
  readonly #fail: Int32Array;
  readonly #depth: Int32Array;
  /** Per state: the needles that end there, reduced to those that matter for the ranges cut out. */
  readonly #ends: (readonly NeedleEnd[])[];
  readonly #rootAscii = new Int32Array(ASCII).fill(NONE);
  readonly #rootOther = new Map<number, number>();

  constructor(
    needles: readonly Needle[],
    readonly fold: Fold,
  ) {
    const trie = new TrieBuilder(this.#rootAscii, this.#rootOther);
    const own = new Map<number, boolean>();
    for (const needle of needles) {
      if (needle.units.length === 0) continue;
      const state = trie.insert(needle.units, fold);
      // The same units needed both anywhere and as a token: anywhere wins.
      own.set(state, (own.get(state) ?? true) && needle.wholeToken);
    }
    this.#firstChild = Int32Array.from(trie.firstChild);
    this.#nextSibling = Int32Array.from(trie.nextSibling);
    this.#code = Int32Array.from(trie.code);
    this.#depth = Int32Array.from(trie.depth);
    this.#fail = new Int32Array(trie.code.length);
    this.#ends = new Array<readonly NeedleEnd[]>(trie.code.length).fill(NO_ENDS);
    this.#link(own);
  }

  get empty(): boolean {
    return this.#firstChild[ROOT] === NONE;
  }

  /** The state after reading `code` in `state`. */
  step(state: number, code: number): number {
    const folded = this.fold(code);
    // The hot loop of every scrub: typed-array reads of states that exist by construction.
    const firstChild = this.#firstChild;
    const nextSibling = this.#nextSibling;
    const codes = this.#code;
    for (let current = state; current !== ROOT; current = this.#fail[current] as number) {
      for (let child = firstChild[current] as number; child !== NONE; child = nextSibling[child] as number) {
        if (codes[child] === folded) return child;
      }
    }
    const next = folded < ASCII ? (this.#rootAscii[folded] as number) : (this.#rootOther.get(folded) ?? NONE);
    return next === NONE ? ROOT : next;
  }

  /** Length of the longest end of the text read so far that begins some needle. */
  depth(state: number): number {
    return this.#depth[state] ?? 0;
  }

  /** Needles ending here: the longest one found anywhere, and whole-token ones longer than it. */
  ends(state: number): readonly NeedleEnd[] {
    return this.#ends[state] ?? NO_ENDS;
  }

  #child(state: number, code: number): number {
    if (state === ROOT)
      return code < ASCII ? (this.#rootAscii[code] ?? NONE) : (this.#rootOther.get(code) ?? NONE);
    for (
      let child = this.#firstChild[state] ?? NONE;
      child !== NONE;
      child = this.#nextSibling[child] ?? NONE
    ) {
      if (this.#code[child] === code) return child;
    }
    return NONE;
  }

  /** Failure links breadth first, each state's ends merged with those of its failure state. */
  #link(own: ReadonlyMap<number, boolean>): void {
    const queue: number[] = [];
    for (
      let child = this.#firstChild[ROOT] ?? NONE;
      child !== NONE;
      child = this.#nextSibling[child] ?? NONE
    ) {
      queue.push(child);
    }
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head] ?? ROOT;
      for (
        let child = this.#firstChild[state] ?? NONE;
        child !== NONE;
        child = this.#nextSibling[child] ?? NONE
      ) {
        const code = this.#code[child] ?? 0;
        let fallback = this.#fail[state] ?? ROOT;
        while (fallback !== ROOT && this.#child(fallback, code) === NONE)
          fallback = this.#fail[fallback] ?? ROOT;
        const target = this.#child(fallback, code);
        this.#fail[child] = target !== NONE && target !== child ? target : ROOT;
        queue.push(child);
      }
      const wholeToken = own.get(state);
      const inherited = this.ends(this.#fail[state] ?? ROOT);
      if (wholeToken === undefined) {
        // Nothing ends here of its own: the failure state's ends, shared rather than copied.
        this.#ends[state] = inherited;
        continue;
      }
      const ends = reduceEnds([{ length: this.depth(state), wholeToken }, ...inherited]);
      this.#ends[state] = ends.length === 0 ? NO_ENDS : ends;
    }
  }
}

/** The trie of the needles, grown in plain arrays before they are packed into typed ones. */
class TrieBuilder {
  readonly firstChild: number[] = [NONE];
  readonly nextSibling: number[] = [NONE];
  readonly code: number[] = [0];
  readonly depth: number[] = [0];

  constructor(
    private readonly rootAscii: Int32Array,
    private readonly rootOther: Map<number, number>,
  ) {}

  /** Adds `units` (folded), returning the state where they end. */
  insert(units: string, fold: Fold): number {
    let state = ROOT;
    for (let i = 0; i < units.length; i++) {
      const code = fold(units.charCodeAt(i));
      let next = this.#child(state, code);
      if (next === NONE) {
        next = this.code.length;
        this.firstChild.push(NONE);
        this.nextSibling.push(this.firstChild[state] ?? NONE);
        this.code.push(code);
        this.depth.push((this.depth[state] ?? 0) + 1);
        this.firstChild[state] = next;
        if (state === ROOT) {
          if (code < ASCII) this.rootAscii[code] = next;
          else this.rootOther.set(code, next);
        }
      }
      state = next;
    }
    return state;
  }

  #child(state: number, code: number): number {
    if (state === ROOT)
      return code < ASCII ? (this.rootAscii[code] ?? NONE) : (this.rootOther.get(code) ?? NONE);
    for (
      let child = this.firstChild[state] ?? NONE;
      child !== NONE;
      child = this.nextSibling[child] ?? NONE
    ) {
      if (this.code[child] === code) return child;
    }
    return NONE;
  }
}

/** Ends at one position cover each other: the longest found-anywhere one hides every shorter one. */
function reduceEnds(ends: readonly NeedleEnd[]): NeedleEnd[] {
  const anywhere = Math.max(0, ...ends.filter((end) => !end.wholeToken).map((end) => end.length));
  const kept: NeedleEnd[] = anywhere > 0 ? [{ length: anywhere, wholeToken: false }] : [];
  const tokenLengths = new Set(
    ends.filter((end) => end.wholeToken && end.length > anywhere).map((e) => e.length),
  );
  for (const length of [...tokenLengths].sort((a, b) => b - a)) kept.push({ length, wholeToken: true });
  return kept;
}

const ASCII_UPPER_A = 0x41;
const ASCII_UPPER_Z = 0x5a;
const CASE_OFFSET = 0x20;
const nonAsciiFolds = new Map<number, number>();

/** Case folding of UTF-16 code units that keeps one unit one unit (so positions stay put). */
export const foldText: Fold = (code) => {
  if (code < 0x80) return code >= ASCII_UPPER_A && code <= ASCII_UPPER_Z ? code + CASE_OFFSET : code;
  let folded = nonAsciiFolds.get(code);
  if (folded === undefined) {
    const upper = String.fromCharCode(code).toUpperCase();
    const lower = upper.length === 1 ? upper.toLowerCase() : '';
    folded = lower.length === 1 ? lower.charCodeAt(0) : code;
    nonAsciiFolds.set(code, folded);
  }
  return folded;
};
