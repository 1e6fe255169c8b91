import { describe, expect, it } from 'vitest';
import { FUNCTION_NAME_MAX_LENGTH, isFunctionName, toFunctionName } from './function-name.js';

describe('toFunctionName', () => {
  it('leaves a legal name alone', () => {
    expect(toFunctionName('search_company_basic')).toBe('search_company_basic');
    expect(toFunctionName('a-b_C9')).toBe('a-b_C9');
  });

  it('maps a namespaced seed 003 id readably: core:execute-python-script → core__execute-python-script', () => {
    expect(toFunctionName('core:execute-python-script')).toBe('core__execute-python-script');
  });

  it('replaces other illegal characters and adds a hash, so "a.b" and "a/b" stay distinct', () => {
    const dotted = toFunctionName('a.b');
    const slashed = toFunctionName('a/b');
    expect(dotted).toMatch(/^a_b_[0-9a-f]{10}$/);
    expect(slashed).toMatch(/^a_b_[0-9a-f]{10}$/);
    expect(dotted).not.toBe(slashed);
  });

  it('gives a name made only of non-ASCII characters a legal tool_<hash> name', () => {
    expect(toFunctionName('根据单个对象类查询对象实例')).toMatch(/^tool_[0-9a-f]{10}$/);
    expect(toFunctionName('')).toMatch(/^tool_[0-9a-f]{10}$/);
  });

  it('truncates an id longer than 64 characters and keeps long ids with a shared prefix apart', () => {
    const prefix = `vendor:${'x'.repeat(80)}`;
    const first = toFunctionName(`${prefix}-one`);
    const second = toFunctionName(`${prefix}-two`);
    expect(first.length).toBeLessThanOrEqual(FUNCTION_NAME_MAX_LENGTH);
    expect(isFunctionName(first)).toBe(true);
    expect(first).toMatch(/^vendor__x+_[0-9a-f]{10}$/);
    expect(first).not.toBe(second);
  });

  it('is deterministic: the same id always maps to the same name', () => {
    const id = `custom:${'long-name-'.repeat(10)}`;
    expect(toFunctionName(id)).toBe(toFunctionName(id));
    expect(toFunctionName('ns:工具')).toBe(toFunctionName('ns:工具'));
  });

  it('always yields a legal function name', () => {
    for (const id of ['a b', '  ', 'ns:tool.v2', 'émoji 🎉', '>', 'x'.repeat(200), 'a:b:c', '-_-']) {
      expect(isFunctionName(toFunctionName(id)), id).toBe(true);
    }
  });
});

describe('isFunctionName', () => {
  it('accepts the OpenAI pattern and rejects the rest', () => {
    expect(isFunctionName('x'.repeat(64))).toBe(true);
    expect(isFunctionName('x'.repeat(65))).toBe(false);
    expect(isFunctionName('')).toBe(false);
    expect(isFunctionName('core:tool')).toBe(false);
    expect(isFunctionName(42)).toBe(false);
  });
});
