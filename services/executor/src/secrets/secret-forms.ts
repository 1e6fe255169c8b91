/**
 * What to look for to find one secret value in text, before any decoding: the value itself and its base64
 * forms. Escaped and URL-encoded forms are not listed here: the matcher decodes JSON escapes and percent
 * escapes out of the text instead (text-views.ts), which covers every mix of escaped and plain characters
 * that encoders produce, where a list of encoded spellings would cover only the encoders someone thought of.
 *
 * Length rule: a value of at least LONG_SECRET_LENGTH characters is looked for anywhere, also inside words
 * and inside larger base64 blobs. A shorter value would blank ordinary text wherever its letters happen to
 * occur (a 4-character value turns up inside common words, and its base64 inside any long blob), so it is
 * looked for only as a whole token: not touching a letter, digit or `_` on either side.
 */

/** Values at least this long are scrubbed anywhere; shorter ones only as whole tokens. */
export const LONG_SECRET_LENGTH = 8;

/** One string to look for, in UTF-16 code units. */
export interface Needle {
  readonly units: string;
  /** Found only where no word character touches it on either side. */
  readonly wholeToken: boolean;
}

/** A value's needles: the value and its base64 forms (of its UTF-8). */
export function secretNeedles(value: string): Needle[] {
  if (value.length === 0) return [];
  const wholeToken = value.length < LONG_SECRET_LENGTH;
  const base64 = base64Forms(Buffer.from(value, 'utf8'), !wholeToken);
  return [value, ...base64].map((units) => ({ units, wholeToken }));
}

/**
 * The value's base64, standard and URL-safe, padded and not; with `embedded`, also the stable core of the
 * value's bytes inside a larger blob at each of the three byte alignments (the characters that depend on
 * the value's bytes only, not on its neighbours).
 */
export function base64Forms(bytes: Buffer, embedded: boolean): string[] {
  const standard = bytes.toString('base64');
  const forms = new Set([standard, standard.replace(/=+$/, '')]);
  if (embedded) {
    for (let alignment = 0; alignment < 3; alignment++) forms.add(embeddedCore(bytes, alignment));
  }
  for (const form of [...forms]) forms.add(urlSafe(form));
  return [...forms].filter((form) => form.length > 0);
}

/**
 * The base64 characters of `bytes` placed `alignment` bytes into a blob: character i covers bits
 * [6i, 6i+6), the value's bits are [8·alignment, 8·(alignment+n)), so the characters wholly inside them
 * run from ceil(8·alignment/6) to floor(8·(alignment+n)/6).
 */
function embeddedCore(bytes: Buffer, alignment: number): string {
  const encoded = Buffer.concat([Buffer.alloc(alignment), bytes]).toString('base64');
  const first = Math.ceil((8 * alignment) / 6);
  const end = Math.floor((8 * (alignment + bytes.length)) / 6);
  return encoded.slice(first, end);
}

function urlSafe(form: string): string {
  return form.replace(/\+/g, '-').replace(/\//g, '_');
}
