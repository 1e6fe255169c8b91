import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { interpretBody, readBoundedBody } from './response-reader.js';

describe('readBoundedBody', () => {
  it('when the body fits the limit exactly, it is read whole and not marked truncated', async () => {
    expect(await readBoundedBody(Readable.from([Buffer.from('abc'), Buffer.from('de')]), 5)).toEqual({
      text: 'abcde',
      truncated: false,
    });
  });

  it('when the limit falls inside a multi-byte character, the half character is dropped', async () => {
    const body = Readable.from([Buffer.from('hé', 'utf8'), Buffer.from('llo')]);

    expect(await readBoundedBody(body, 2)).toEqual({ text: 'h', truncated: true });
    expect(body.destroyed).toBe(true);
  });
});

describe('interpretBody', () => {
  it.each([
    ['{"a":1}', 'application/json; charset=utf-8', { a: 1 }],
    ['[1]', 'text/plain', [1]],
    ['{not json', 'application/json', '{not json'],
    ['hello', undefined, 'hello'],
    ['', 'application/json', null],
  ])('when the body is %j (%s), the model gets %j', (text, contentType, expected) => {
    expect(interpretBody(text, contentType)).toEqual(expected);
  });
});
