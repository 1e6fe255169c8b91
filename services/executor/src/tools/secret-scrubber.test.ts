import { describe, expect, it } from 'vitest';
import { SecretScrubber } from './secret-scrubber.js';

describe('SecretScrubber', () => {
  it('when a text holds a secret as is or URL-encoded, both are replaced', () => {
    const scrubber = new SecretScrubber(['s3cret/value+1']);

    expect(scrubber.scrub('raw s3cret/value+1, path s3cret%2Fvalue%2B1, form s3cret%2Fvalue%2B1')).toBe(
      'raw [REDACTED], path [REDACTED], form [REDACTED]',
    );
  });

  it('when one secret contains another, the longer one is replaced whole', () => {
    const scrubber = new SecretScrubber(['abcd', 'abcdefgh']);

    expect(scrubber.scrub('x abcdefgh y abcd')).toBe('x [REDACTED] y [REDACTED]');
  });

  it('when a secret is shorter than four characters, it is not scrubbed (it would blank ordinary text)', () => {
    expect(new SecretScrubber(['ab1']).scrub('ab1 tab1e')).toBe('ab1 tab1e');
  });

  it('when a cut text ends in the beginning of a secret, that beginning is scrubbed', () => {
    const scrubber = new SecretScrubber(['token-12345']);

    expect(scrubber.scrubCut('header: token-12')).toBe('header: [REDACTED]');
    expect(scrubber.scrubCut('header: none')).toBe('header: none');
  });

  it('when a JSON value holds secrets in keys and strings, every one is replaced and the rest is kept', () => {
    const scrubber = new SecretScrubber(['key-9999']);

    expect(scrubber.scrubDeep({ list: ['key-9999', 3, null], 'key-9999': { ok: true } })).toEqual({
      list: ['[REDACTED]', 3, null],
      '[REDACTED]': { ok: true },
    });
  });
});
