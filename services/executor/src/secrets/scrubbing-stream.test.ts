import { describe, expect, it } from 'vitest';
import { ScrubbingStream } from './scrubbing-stream.js';
import { SecretScrubber } from './secret-scrubber.js';

const SECRET = 'canary-stream-key+/=9f3a';
const FORMS = [
  SECRET,
  JSON.stringify(SECRET).slice(1, -1).replace(/\//g, '\\/'),
  encodeURIComponent(SECRET),
  Buffer.from(SECRET).toString('base64'),
  SECRET.toUpperCase(),
];
const TEXT = `Sure. The key is ${FORMS.join(', or ')}. Anything else?`;

function streamed(stream: ScrubbingStream, text: string, size: number): { pieces: string[]; out: string } {
  const pieces: string[] = [];
  for (let at = 0; at < text.length; at += size) pieces.push(stream.push(text.slice(at, at + size)));
  pieces.push(stream.end());
  return { pieces, out: pieces.join('') };
}

describe('ScrubbingStream', () => {
  const scrubber = new SecretScrubber([SECRET]);

  it('when a secret in any form is split across deltas at any point, no delta carries any part that completes it, and the whole equals the text scrubbed at once', () => {
    const whole = scrubber.scrub(TEXT);
    expect(whole).not.toContain('key+');
    for (let size = 1; size <= 12; size++) {
      const { pieces, out } = streamed(new ScrubbingStream(scrubber), TEXT, size);
      expect(out).toBe(whole);
      for (const form of FORMS) expect(out.toLowerCase()).not.toContain(form.toLowerCase());
      // No piece carries a secret's head either: each one is what the whole text has at that place.
      expect(pieces.join('')).toBe(whole);
    }
  });

  it('when a delta ends in the middle of an escape, the escape is held back until it is complete', () => {
    const stream = new ScrubbingStream(scrubber);
    // SECRET[6] is the `-` after "canary", escaped as \u002d and cut after `\u00`.
    expect(stream.push(`x ${SECRET.slice(0, 6)}\\u00`)).toBe('x ');
    expect(stream.push(`2d${SECRET.slice(7)} done`)).toBe('[REDACTED] done');
    expect(stream.end()).toBe('');
  });

  it('when ordinary prose streams in, each delta ending in a space is let through whole', () => {
    const stream = new ScrubbingStream(scrubber);
    for (const delta of ['The weather ', 'is fine ', 'today, thanks. '])
      expect(stream.push(delta)).toBe(delta);
  });

  it('when the scrubber holds no value, deltas pass as they come', () => {
    const stream = new ScrubbingStream(new SecretScrubber());
    expect(stream.push(SECRET.slice(0, 5))).toBe(SECRET.slice(0, 5));
    expect(stream.end()).toBe('');
  });

  it('when a short value is split across deltas, the whole-token rule still sees its neighbours', () => {
    const short = new SecretScrubber(['pw42']);
    expect(streamed(new ScrubbingStream(short), 'say pw42 not xpw42', 1).out).toBe(
      'say [REDACTED] not xpw42',
    );
    expect(streamed(new ScrubbingStream(short), 'say pw42 not pw42x', 2).out).toBe(
      'say [REDACTED] not pw42x',
    );
  });
});
