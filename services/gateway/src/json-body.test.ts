import { describe, expect, it } from 'vitest';
import { NestedTooDeep } from './errors.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH, parseJsonBody } from './json-body.js';

const nested = (depth: number): string => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

describe('JSON nesting depth', () => {
  it('counts objects and arrays inside one another, not side by side', () => {
    expect(jsonNestsDeeperThan('{"a":[1,{"b":2}]}', 3)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":[1,{"b":2}]}', 2)).toBe(true);
    expect(jsonNestsDeeperThan('[[],[],[],[],[]]', 2)).toBe(false);
    expect(jsonNestsDeeperThan('42', 0)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    expect(jsonNestsDeeperThan('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"\\"[[[[", "b":"\\\\"}', 1)).toBe(false);
    expect(jsonNestsDeeperThan('{"a":"\\\\", "b":[[1]]}', 2)).toBe(true);
    expect(jsonNestsDeeperThan('{"[[[":{"]]]":1}}', 2)).toBe(false);
  });

  it(`a body at ${MAX_JSON_DEPTH} levels parses; one level more is refused without being parsed`, () => {
    expect(parseJsonBody(nested(MAX_JSON_DEPTH))).toEqual({ value: JSON.parse(nested(MAX_JSON_DEPTH)) });
    expect(parseJsonBody(nested(MAX_JSON_DEPTH + 1))).toBeInstanceOf(NestedTooDeep);
  });

  it('a body a million levels deep is refused in one pass, with the limit in its detail', () => {
    const refused = parseJsonBody('['.repeat(1_000_000) + ']'.repeat(1_000_000));
    expect(refused).toBeInstanceOf(NestedTooDeep);
    expect((refused as NestedTooDeep).toBody()).toEqual({
      code: 'INVALID_REQUEST',
      message: `the request body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`,
      detail: { max_depth: MAX_JSON_DEPTH },
    });
  });

  it('text that is not JSON is INVALID_REQUEST', () => {
    expect((parseJsonBody('{"a":') as NestedTooDeep).toBody()).toEqual({
      code: 'INVALID_REQUEST',
      message: 'the request body is not valid JSON',
    });
  });
});
