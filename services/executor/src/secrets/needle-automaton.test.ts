import { describe, expect, it } from 'vitest';
import { foldText, NeedleAutomaton } from './needle-automaton.js';

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): (n: number) => number {
  let state = seed;
  return (n) => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return state % n;
  };
}

const ALPHABET = 'abAB+/é中';
const word = (next: (n: number) => number, min: number, max: number): string =>
  Array.from({ length: min + next(max - min + 1) }, () => ALPHABET[next(ALPHABET.length)]).join('');
const fold = (text: string): string =>
  [...text].map((c) => String.fromCharCode(foldText(c.charCodeAt(0)))).join('');

describe('the needle automaton', () => {
  it('at every position it reports the longest needle ending there and the longest needle prefix pending, as a naive search finds them', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const next = random(seed);
      const needles = Array.from({ length: 1 + next(6) }, () => word(next, 1, 6));
      const text = word(next, 0, 60);
      const automaton = new NeedleAutomaton(
        needles.map((units) => ({ units, wholeToken: false })),
        foldText,
      );
      const folded = fold(text);
      const foldedNeedles = needles.map(fold);
      let state = 0;
      for (let i = 0; i < text.length; i++) {
        state = automaton.step(state, text.charCodeAt(i));
        const read = folded.slice(0, i + 1);
        const longestEnding = Math.max(
          0,
          ...foldedNeedles.filter((n) => read.endsWith(n)).map((n) => n.length),
        );
        let pending = 0;
        for (let k = 1; k <= read.length; k++) {
          if (foldedNeedles.some((n) => n.startsWith(read.slice(-k)))) pending = k;
        }
        const where = `seed ${seed}, needles ${JSON.stringify(needles)}, text ${JSON.stringify(text)}, at ${i}`;
        expect(automaton.ends(state)[0]?.length ?? 0, where).toBe(longestEnding);
        expect(automaton.depth(state), where).toBe(pending);
      }
    }
  });

  it('with no needles it is empty and stays at its root', () => {
    const automaton = new NeedleAutomaton([], foldText);
    expect(automaton.empty).toBe(true);
    expect(automaton.step(0, 'a'.charCodeAt(0))).toBe(0);
    expect(automaton.ends(0)).toEqual([]);
  });
});
