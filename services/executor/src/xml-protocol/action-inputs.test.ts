import { describe, expect, it } from 'vitest';
import { jsonInputProblems, toToolArguments } from './action-inputs.js';

const SCRIPT_PARAMETERS = {
  type: 'object',
  properties: {
    scriptPath: { type: 'string' },
    inputData: { type: 'object', additionalProperties: true },
    timeoutMs: { type: 'integer', minimum: 100 },
    verbose: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    level: { enum: [1, 2, 3] },
    label: { anyOf: [{ type: 'string' }, { type: 'null' }] },
    free: {},
  },
  required: ['scriptPath'],
};

const inputs = (values: Record<string, string>) =>
  Object.entries(values).map(([name, text]) => ({ name, text }));

describe('turning ACTION inputs into tool arguments', () => {
  it('when the schema wants JSON values, their text is parsed; string parameters keep their text', () => {
    expect(
      toToolArguments(
        inputs({
          scriptPath: '42',
          inputData: '{"threshold": 0.75}',
          timeoutMs: ' 30000 ',
          verbose: 'true',
          tags: '["a","b"]',
          level: '2',
          label: 'null',
          free: '[1]',
        }),
        SCRIPT_PARAMETERS,
      ),
    ).toEqual({
      scriptPath: '42',
      inputData: { threshold: 0.75 },
      timeoutMs: 30000,
      verbose: true,
      tags: ['a', 'b'],
      level: 2,
      label: 'null',
      free: [1],
    });
  });

  it('when the type is not known, only object and array text is parsed', () => {
    expect(toToolArguments(inputs({ free: '12', other: '{"a":1}', name: 'x' }), SCRIPT_PARAMETERS)).toEqual({
      free: '12',
      other: { a: 1 },
      name: 'x',
    });
    expect(toToolArguments(inputs({ q: '{"a":1}' }), undefined)).toEqual({ q: { a: 1 } });
  });

  it('when a JSON input does not parse, its text is kept and the problem names the input and the reason', () => {
    const args = toToolArguments(
      inputs({ inputData: '{threshold: 0.75}', timeoutMs: '"30000"' }),
      SCRIPT_PARAMETERS,
    );
    expect(args).toEqual({ inputData: '{threshold: 0.75}', timeoutMs: '"30000"' });
    const problems = jsonInputProblems(args, SCRIPT_PARAMETERS);
    // A JSON string where a number belongs parses: the schema check, not this one, refuses it.
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^input "inputData" is not valid JSON \(.*property name.*\)$/);
  });
});
