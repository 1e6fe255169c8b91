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

export class NeedleAutomaton {
  readonly #children: Map<number, number>[] = [new Map()];
  readonly #fail: number[] = [ROOT];
  readonly #depth: number[] = [0];
  /** Per state: the needles that end there, reduced to those that matter for the ranges cut out. */
  readonly #ends: NeedleEnd[][] = [[]];

  constructor(
    needles: readonly Needle[],
    readonly fold: Fold,
  ) {
    const own = new Map<number, boolean>();
    for (const needle of needles) {
      if (needle.units.length === 0) continue;
      const state = this.#insert(needle.units);
      // The same units needed both anywhere and as a token: anywhere wins.
      own.set(state, (own.get(state) ?? true) && needle.wholeToken);
    }
    this.#link(own);
  }

  get empty(): boolean {
    return this.#children[ROOT]?.size === 0;
  }

  /** The state after reading `code` in `state`. */
  step(state: number, code: number): number {
    const folded = this.fold(code);
    for (let current = state; ; current = this.#fail[current] ?? ROOT) {
      const next = this.#children[current]?.get(folded);
      if (next !== undefined) return next;
      if (current === ROOT) return ROOT;
    }
  }

  /** Length of the longest end of the text read so far that begins some needle. */
  depth(state: number): number {
    return this.#depth[state] ?? 0;
  }

  /** Needles ending here: the longest one found anywhere, and whole-token ones longer than it. */
  ends(state: number): readonly NeedleEnd[] {
    return this.#ends[state] ?? [];
  }

  #insert(units: string): number {
    let state = ROOT;
    for (let i = 0; i < units.length; i++) {
      const code = this.fold(units.charCodeAt(i));
      const children = this.#children[state] ?? new Map<number, number>();
      let next = children.get(code);
      if (next === undefined) {
        next = this.#children.length;
        children.set(code, next);
        this.#children.push(new Map());
        this.#fail.push(ROOT);
        this.#depth.push((this.#depth[state] ?? 0) + 1);
        this.#ends.push([]);
      }
      state = next;
    }
    return state;
  }

  /** Failure links breadth first, each state's ends merged with those of its failure state. */
  #link(own: ReadonlyMap<number, boolean>): void {
    const queue: number[] = [];
    for (const child of this.#children[ROOT]?.values() ?? []) queue.push(child);
    for (let head = 0; head < queue.length; head++) {
      const state = queue[head] ?? ROOT;
      for (const [code, child] of this.#children[state] ?? []) {
        let fallback = this.#fail[state] ?? ROOT;
        while (fallback !== ROOT && !this.#children[fallback]?.has(code))
          fallback = this.#fail[fallback] ?? ROOT;
        const target = this.#children[fallback]?.get(code);
        this.#fail[child] = target !== undefined && target !== child ? target : ROOT;
        queue.push(child);
      }
      const wholeToken = own.get(state);
      const ends = [
        ...(wholeToken === undefined ? [] : [{ length: this.depth(state), wholeToken }]),
        ...this.ends(this.#fail[state] ?? ROOT),
      ];
      this.#ends[state] = reduceEnds(ends);
    }
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
