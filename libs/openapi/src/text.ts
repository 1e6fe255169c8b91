// Bounded text for descriptions: a model's context is finite and OpenAI rejects function descriptions
// over 1,024 characters, so long texts are cut with a visible ellipsis.

export const ELLIPSIS = '…';

export interface BoundedText {
  readonly text: string;
  readonly truncated: boolean;
}

export function boundText(text: string, maxLength: number): BoundedText {
  if (text.length <= maxLength) return { text, truncated: false };
  let cut = Math.max(0, maxLength - ELLIPSIS.length);
  // Never split a surrogate pair.
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut).trimEnd() + ELLIPSIS, truncated: true };
}

/** Joins description fragments with a space, skipping empty ones. */
export function joinSentences(...parts: Array<string | undefined>): string | undefined {
  const kept = parts.map((part) => part?.trim()).filter((part): part is string => !!part);
  return kept.length === 0 ? undefined : kept.join(' ');
}
