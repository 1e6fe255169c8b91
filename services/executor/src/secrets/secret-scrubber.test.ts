import { describe, expect, it } from 'vitest';
import { LONG_SECRET_LENGTH } from './secret-forms.js';
import { SecretScrubber } from './secret-scrubber.js';

/** Has every character JSON, URLs and base64 treat specially, and one outside ASCII. */
const SECRET = 'Sk-live+a/b=c"d\\é9Zq';
const bytes = Buffer.from(SECRET);

const jsonBody = JSON.stringify(SECRET).slice(1, -1);
const unicodeEscaped = (text: string, hexCase: (hex: string) => string = (hex) => hex) =>
  [...text].map((c) => `\\u${hexCase(c.charCodeAt(0).toString(16).padStart(4, '0'))}`).join('');

const FORMS: Record<string, string> = {
  raw: SECRET,
  'JSON.stringify': jsonBody,
  'JSON with \\/': jsonBody.replace(/\//g, '\\/'),
  'JSON with every character \\u-escaped': unicodeEscaped(SECRET),
  'JSON with upper-case \\u hex': unicodeEscaped(SECRET, (hex) => hex.toUpperCase()),
  'JSON with only some characters \\u-escaped': jsonBody.replace('+', '\\u002B').replace('é', '\\u00e9'),
  encodeURIComponent: encodeURIComponent(SECRET),
  'percent-encoding in lower-case hex': encodeURIComponent(SECRET).replace(/%[0-9A-F]{2}/g, (m) =>
    m.toLowerCase(),
  ),
  'form encoding': new URLSearchParams({ s: SECRET }).toString().slice(2),
  'every byte percent-encoded': [...bytes].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
  base64: bytes.toString('base64'),
  'base64 without padding': bytes.toString('base64').replace(/=+$/, ''),
  base64url: bytes.toString('base64url'),
  'base64 inside JSON (\\/ escaped)': bytes.toString('base64').replace(/\//g, '\\/'),
  'base64 URL-encoded': encodeURIComponent(bytes.toString('base64')),
  'upper case': SECRET.toUpperCase(),
  'lower case': SECRET.toLowerCase(),
  'upper case, JSON-escaped': JSON.stringify(SECRET.toUpperCase()).slice(1, -1),
  'upper case, URL-encoded': encodeURIComponent(SECRET.toUpperCase()),
};

describe('SecretScrubber', () => {
  const scrubber = new SecretScrubber([SECRET]);

  it.each(Object.entries(FORMS))(
    'when a text holds the secret %s, it is replaced and the rest is kept',
    (_, form) => {
      expect(scrubber.scrub(`before ${form} after`)).toBe('before [REDACTED] after');
    },
  );

  it('when an API echoes a key with `+/=` JSON-escaped as `+\\/=`, the echo is replaced (the finding)', () => {
    const key = 'AbC+dEf/GhI=jKl';
    const echoed = JSON.stringify({ error: `invalid key ${key}` }).replace(/\//g, '\\/');

    expect(new SecretScrubber([key]).scrub(echoed)).toBe('{"error":"invalid key [REDACTED]"}');
  });

  it.each([0, 1, 2])(
    'when the secret is embedded in a larger base64 blob %i bytes past a 3-byte boundary, its stable core is replaced',
    (alignment) => {
      for (const encoding of ['base64', 'base64url'] as const) {
        const prefix = Buffer.from('prefix-bytes!'.slice(0, 12 + alignment));
        const blob = Buffer.concat([prefix, bytes, Buffer.from('-suffix')]).toString(encoding);
        const scrubbed = scrubber.scrub(`data:${blob};`);

        expect(scrubbed).toContain('[REDACTED]');
        // What is left of the blob is at most the characters that mix the secret's bits with its neighbours'.
        const [head, tail] = scrubbed.slice('data:'.length, -1).split('[REDACTED]') as [string, string];
        expect(blob.startsWith(head)).toBe(true);
        expect(blob.endsWith(tail)).toBe(true);
        expect(blob.length - head.length - tail.length).toBeGreaterThanOrEqual(
          Math.floor((8 * bytes.length) / 6) - 1,
        );
      }
    },
  );

  it('when text holds no secret, it comes back as it was', () => {
    const text = 'An ordinary answer, with "quotes", \\escapes\\u0020, 100% of it, and base64 c2VjcmV0.';
    expect(scrubber.scrub(text)).toBe(text);
  });

  it('when the scrubber holds no value, text is returned untouched without being searched', () => {
    expect(new SecretScrubber().scrub(SECRET)).toBe(SECRET);
  });

  it('when a long value sits inside a word, it is replaced there too', () => {
    expect(new SecretScrubber(['abcd1234efgh']).scrub('xxabcd1234efghyy')).toBe('xx[REDACTED]yy');
  });

  it(`when a value is shorter than ${LONG_SECRET_LENGTH} characters, it is replaced as a whole token only (so ordinary words survive)`, () => {
    const short = new SecretScrubber(['pw42']);

    expect(short.scrub('pw42 is it; "pw42", PW42, (pw42), x-pw42-y')).toBe(
      '[REDACTED] is it; "[REDACTED]", [REDACTED], ([REDACTED]), x-[REDACTED]-y',
    );
    expect(short.scrub('apw42 pw42b pw42_c')).toBe('apw42 pw42b pw42_c');
    expect(
      short.scrub(`token=${encodeURIComponent('pw42')}&b64=${Buffer.from('pw42').toString('base64')}`),
    ).toBe('token=[REDACTED]&b64=[REDACTED]');
  });

  it('when a value is a single character, it is still scrubbed as a whole token: no length is exempt', () => {
    expect(new SecretScrubber(['7']).scrub('pin 7, not 17 or 71')).toBe('pin [REDACTED], not 17 or 71');
  });

  it('when secrets overlap or touch, the stretch they cover becomes one marker', () => {
    const scrubber = new SecretScrubber(['abcdefgh', 'efghijkl', 'mnopqrst']);
    expect(scrubber.scrub('x abcdefghijklmnopqrst y')).toBe('x [REDACTED] y');
  });

  it('when one secret contains another, the longer one is replaced whole', () => {
    const scrubber = new SecretScrubber(['abcdefgh', 'abcdefgh12345678']);
    expect(scrubber.scrub('x abcdefgh12345678 y abcdefgh')).toBe('x [REDACTED] y [REDACTED]');
  });

  it('when a value is added after the scrubber was used, it is scrubbed from then on', () => {
    const growing = new SecretScrubber(['first-secret-1']);
    expect(growing.scrub('first-secret-1 late-token-99')).toBe('[REDACTED] late-token-99');
    growing.add('late-token-99');
    expect(growing.scrub('first-secret-1 late-token-99')).toBe('[REDACTED] [REDACTED]');
  });

  it('when a cut text ends in the beginning of a secret (or of its escape), that beginning is scrubbed', () => {
    const cut = new SecretScrubber(['token-12345']);

    expect(cut.scrubCut('header: token-12')).toBe('header: [REDACTED]');
    expect(cut.scrubCut('header: tok\\u0065n-1')).toBe('header: [REDACTED]');
    expect(cut.scrubCut('header: token%2')).toBe('header: [REDACTED]');
    expect(cut.scrubCut('header: none')).toBe('header: none');
  });

  it('when a JSON value holds secrets in keys and strings, every one is replaced and the rest is kept', () => {
    const deep = new SecretScrubber(['key-9999']);

    expect(deep.scrubDeep({ list: ['KEY-9999', 3, null], 'key-9999': { ok: true } })).toEqual({
      list: ['[REDACTED]', 3, null],
      '[REDACTED]': { ok: true },
    });
  });
});
