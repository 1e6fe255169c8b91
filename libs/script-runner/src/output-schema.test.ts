import type { ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ScriptError } from './errors.js';
import { CompiledSchemas } from './compiled-schemas.js';
import { checkOutput, compileOutputSchema } from './output-schema.js';

const resultSchema = {
  type: 'object',
  properties: { total: { type: 'integer' } },
  required: ['total'],
};

function counting(): { compile: (schema: object) => ValidateFunction; compiled: object[] } {
  const compiled: object[] = [];
  return {
    compiled,
    compile: (schema) => {
      compiled.push(schema);
      return compileOutputSchema(schema);
    },
  };
}

describe('output schemas', () => {
  it('when two runs carry the same output schema as separate objects, it is compiled once', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 4);

    const first = schemas.validatorFor(structuredClone(resultSchema));
    const second = schemas.validatorFor(structuredClone(resultSchema));

    expect(compiled).toHaveLength(1);
    expect(second).toBe(first);
  });

  it('when an output schema does not compile, each copy of it is refused with its error, compiled once', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 4);
    const broken = { type: 'object', properties: { total: { type: 'no-such-type' } } };

    const first = schemas.validatorFor(structuredClone(broken));
    const second = schemas.validatorFor(structuredClone(broken));

    expect(first).toBeInstanceOf(Error);
    expect(second).toBe(first);
    expect(compiled).toHaveLength(1);
    expect(() => checkOutput(structuredClone(broken), { total: 1 })).toThrow(/output schema is invalid/);
  });

  it('beyond its bound, the least recently used schema is compiled again when it returns', () => {
    const { compile, compiled } = counting();
    const schemas = new CompiledSchemas(compile, 1);

    schemas.validatorFor({ type: 'string' });
    schemas.validatorFor({ type: 'number' });
    schemas.validatorFor({ type: 'string' });

    expect(compiled).toHaveLength(3);
  });

  it('output that breaks a copied schema names the bad path', () => {
    const error = (() => {
      try {
        checkOutput(structuredClone(resultSchema), { total: 'many' });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(ScriptError);
    expect((error as ScriptError).message).toBe('the script output does not match the tool output schema');
    expect((error as ScriptError).details).toContain('/total');
    expect(() => checkOutput(structuredClone(resultSchema), { total: 3 })).not.toThrow();
  });
});
