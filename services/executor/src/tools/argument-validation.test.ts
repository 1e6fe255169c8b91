import { describe, expect, it } from 'vitest';
import type { ValidateFunction } from 'ajv';
import { CompiledSchemas } from '@agentmesh/script-runner';
import { compileArgumentSchema, parseToolArguments, validateToolArguments } from './argument-validation.js';
import { seed000Plugin } from './__fixtures__/http-tools.js';

const orderSchema = {
  type: 'object',
  properties: {
    keyword: { type: 'string', minLength: 1 },
    page_index: { type: 'integer', default: 1 },
    sort: { enum: ['asc', 'desc'] },
    since: { type: 'string', format: 'date-time' },
    filters: {
      type: 'object',
      properties: { tags: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
  },
  required: ['keyword'],
};

describe('validateToolArguments', () => {
  it('when the arguments fit, the model gets them back with the schema defaults filled in (input untouched)', () => {
    const args = { keyword: 'tencent' };

    expect(validateToolArguments(orderSchema, args)).toEqual({
      ok: true,
      value: { keyword: 'tencent', page_index: 1 },
    });
    expect(args).toEqual({ keyword: 'tencent' });
  });

  it('when arguments break several rules, the message names each path and why', () => {
    const outcome = validateToolArguments(orderSchema, {
      page_index: '2',
      sort: 'up',
      filters: { tags: ['a', 7], color: 'red' },
    });

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(outcome.error.message).toBe(
      'invalid arguments: keyword: is required; page_index: must be integer; sort: must be one of "asc", "desc"; ' +
        'filters.color: is not an allowed property; filters.tags[1]: must be string',
    );
  });

  it('when a schema uses a format the validator does not know, the format is tolerated', () => {
    const schema = { type: 'object', properties: { when: { type: 'string', format: 'x-lunar-date' } } };

    expect(validateToolArguments(schema, { when: 'whenever' })).toMatchObject({ ok: true });
  });

  it('when a schema names the 2020-12 dialect, it is still checked', () => {
    const schema = { $schema: 'https://json-schema.org/draft/2020-12/schema', ...orderSchema };

    expect(validateToolArguments(schema, {})).toMatchObject({
      ok: false,
      error: { code: 'INVALID_REQUEST' },
    });
    expect(validateToolArguments(schema, { keyword: 'x' })).toMatchObject({ ok: true });
  });

  it('when the arguments are not an object, the model is told what it sent', () => {
    expect(validateToolArguments(orderSchema, ['keyword'])).toMatchObject({
      ok: false,
      error: { code: 'INVALID_REQUEST', message: 'the arguments must be a JSON object, not an array' },
    });
  });

  it("when the tool's own schema cannot be compiled, the failure is a TOOL_ERROR rather than the model's fault", () => {
    const broken = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };

    expect(validateToolArguments(broken, { a: 1 })).toMatchObject({
      ok: false,
      error: { code: 'TOOL_ERROR' },
    });
  });

  it("when seed 000's plugin is called without its required keyword, the message names keyword", () => {
    const outcome = validateToolArguments(seed000Plugin().parameters, { page_index: 2 });

    expect(outcome).toMatchObject({
      ok: false,
      error: { message: 'invalid arguments: keyword: is required' },
    });
  });
});

describe('compiled argument schemas', () => {
  function counting(): { compile: (schema: object) => ValidateFunction; compiled: object[] } {
    const compiled: object[] = [];
    return {
      compiled,
      compile: (schema) => {
        compiled.push(schema);
        return compileArgumentSchema(schema);
      },
    };
  }

  it('when two tasks carry the same schema as separate objects, it is compiled once and checks both', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 8);
    const first = schemas.validatorFor(structuredClone(orderSchema));
    const second = schemas.validatorFor(structuredClone(orderSchema));

    expect(compiled).toHaveLength(1);
    expect(second).toBe(first);
    expect(first instanceof Error).toBe(false);
    if (first instanceof Error) return;
    expect(first({ keyword: 'x' })).toBe(true);
    expect(first({})).toBe(false);
  });

  it('when a schema does not compile, every copy of it reports the same error and it is compiled once', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 8);
    const broken = { type: 'object', properties: { a: { $ref: '#/definitions/missing' } } };

    const first = schemas.validatorFor(structuredClone(broken));
    const second = schemas.validatorFor(structuredClone(broken));

    expect(first).toBeInstanceOf(Error);
    expect(second).toBe(first);
    expect((first as Error).message).toContain('missing');
    expect(compiled).toHaveLength(1);
  });

  it('beyond its bound, the least recently used schema is dropped and compiled again when it returns', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 2);
    const schema = (name: string): object => ({ type: 'object', properties: { [name]: { type: 'string' } } });

    schemas.validatorFor(schema('a'));
    schemas.validatorFor(schema('b'));
    schemas.validatorFor(schema('a'));
    schemas.validatorFor(schema('c'));
    expect(schemas.size()).toBe(2);
    expect(compiled).toHaveLength(3);

    schemas.validatorFor(schema('a'));
    expect(compiled).toHaveLength(3);
    schemas.validatorFor(schema('b'));
    expect(compiled).toHaveLength(4);
  });

  it('the shared validators give a copy of a tool schema the same checks as the original', () => {
    const copy = JSON.parse(JSON.stringify(orderSchema)) as object;

    expect(validateToolArguments(copy, { keyword: 'x' })).toEqual({
      ok: true,
      value: { keyword: 'x', page_index: 1 },
    });
    expect(validateToolArguments(copy, {})).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
  });
});

describe('parseToolArguments', () => {
  it('when the model sends a JSON object, it is parsed', () => {
    expect(parseToolArguments('{"keyword":"字节跳动"}')).toEqual({
      ok: true,
      value: { keyword: '字节跳动' },
    });
  });

  it('when the model sends an empty string, it means no arguments', () => {
    expect(parseToolArguments('  ')).toEqual({ ok: true, value: {} });
  });

  it('when the model sends broken JSON, it gets INVALID_REQUEST saying so', () => {
    const outcome = parseToolArguments('{"keyword": "abc"');

    expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    if (!outcome.ok) expect(outcome.error.message).toMatch(/^the arguments are not valid JSON/);
  });

  it.each([
    ['[1,2]', 'an array'],
    ['null', 'null'],
    ['"text"', 'a string'],
    ['42', 'a number'],
  ])('when the model sends %s, it is told arguments must be an object, not %s', (raw, kind) => {
    expect(parseToolArguments(raw)).toEqual({
      ok: false,
      error: { code: 'INVALID_REQUEST', message: `the arguments must be a JSON object, not ${kind}` },
    });
  });
});
