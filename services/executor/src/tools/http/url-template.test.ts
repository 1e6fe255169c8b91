import { describe, expect, it } from 'vitest';
import { fillUrlTemplate, placeholderNames } from './url-template.js';
import { InvalidToolArgumentsError } from '../tool-errors.js';

describe('fillUrlTemplate', () => {
  it('when values hold reserved characters, each is encoded as one path segment', () => {
    expect(fillUrlTemplate('https://api.test/u/{user}/f/{file}', { user: 'a b/c', file: '../etc?x#y' })).toBe(
      'https://api.test/u/a%20b%2Fc/f/..%2Fetc%3Fx%23y',
    );
  });

  it('when a placeholder appears twice, both are filled and it is listed once', () => {
    expect(placeholderNames('https://x.test/{id}/{id}')).toEqual(['id']);
    expect(fillUrlTemplate('https://x.test/{id}/{id}', { id: 7 })).toBe('https://x.test/7/7');
  });

  it('when a path value is missing, empty or an object, the error names every such argument', () => {
    const fill = () => fillUrlTemplate('https://x.test/{a}/{b}/{c}', { a: '', c: { x: 1 } });

    expect(fill).toThrow(InvalidToolArgumentsError);
    expect(fill).toThrow('missing path arguments: a, b, c');
  });

  it.each(['..', '.', '%2e', '.%2E', '%2E%2e'])(
    'when a path value is %j, it is refused as INVALID_REQUEST naming the argument (it would be a dot segment)',
    (value) => {
      const fill = () => fillUrlTemplate('https://x.test/echo/{id}/profile', { id: value });

      expect(fill).toThrow(InvalidToolArgumentsError);
      expect(fill).toThrow(/path argument id would make a "\." or "\.\." path segment/);
    },
  );

  it('when two placeholders together fill one segment with "..", both are named', () => {
    expect(() => fillUrlTemplate('https://x.test/{a}{b}/z', { a: '.', b: '.' })).toThrow(
      'path arguments a, b would make',
    );
  });

  it('when a value only looks like dots ("...", ".env", "a..b"), it is kept', () => {
    for (const value of ['...', '.env', 'a..b']) {
      expect(fillUrlTemplate('https://x.test/f/{name}', { name: value })).toBe(`https://x.test/f/${value}`);
    }
  });
});
