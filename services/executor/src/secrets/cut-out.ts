/** Replacing found stretches of a text with the marker every scrubbed secret becomes. */
import type { TextRange } from './secret-matcher.js';

/** What a secret is replaced with. */
export const REDACTED = '[REDACTED]';

/** `text` with each range replaced by {@link REDACTED}; ranges may overlap and come in any order. */
export function cutOut(text: string, ranges: readonly TextRange[]): string {
  if (ranges.length === 0) return text;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  let out = '';
  /** End of the last range cut out; -1 before the first. */
  let at = -1;
  for (const [start, end] of sorted) {
    if (end <= at) continue;
    // A range overlapping or touching the one before extends it: one marker for both.
    if (start > at) out += text.slice(Math.max(at, 0), start) + REDACTED;
    at = end;
  }
  if (at < 0) return text;
  return out + text.slice(at);
}
