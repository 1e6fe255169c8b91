import { describe, expect, it } from 'vitest';
import { isDotSegment, templateSegments } from './path-segments.js';

describe('dot segments', () => {
  it.each(['.', '..', '%2e', '%2E', '.%2e', '%2E.', '%2e%2E', '%252e', '.%252E'])(
    'when a segment reads %j, it is a dot segment (as written or decoded once)',
    (segment) => {
      expect(isDotSegment(segment)).toBe(true);
    },
  );

  it.each(['...', '.env', 'a..b', '', '%25252e', ';id=..', '%2e%2e%2e', '%zz'])(
    'when a segment reads %j, it is not a dot segment',
    (segment) => {
      expect(isDotSegment(segment)).toBe(false);
    },
  );

  it('when a template is split, a placeholder stays whole even with a slash in its name', () => {
    expect(templateSegments('/a/{b/c}.{d}/e')).toEqual(['', 'a', '{b/c}.{d}', 'e']);
  });
});
