import { describe, expect, it } from 'vitest';
import {
  compileCondition,
  ConditionSyntaxError,
  MAX_CONDITION_DEPTH,
  matchLike,
} from './action-condition.js';

const holds = (condition: unknown, context: Record<string, unknown>) => compileCondition(condition)(context);

function syntaxError(condition: unknown): ConditionSyntaxError {
  try {
    compileCondition(condition);
  } catch (error) {
    if (error instanceof ConditionSyntaxError) return error;
    throw error;
  }
  throw new Error('the condition was read');
}

describe('action type conditions (ontology-query CondCfg)', () => {
  const disease = { disease_id: 'disease_000001', severity: 3, stage: 'acute', tags: ['rare', 'genetic'] };

  it('when a comparison names a field of the object, it holds or not by its value (numbers in strings compare as numbers)', () => {
    expect(holds({ field: 'stage', operation: '==', value: 'acute' }, disease)).toBe(true);
    expect(holds({ field: 'stage', operation: '=', value: 'chronic' }, disease)).toBe(false);
    expect(holds({ field: 'severity', operation: '>=', value: 3 }, disease)).toBe(true);
    expect(holds({ field: 'severity', operation: '>', value: '10' }, disease)).toBe(false);
    expect(holds({ field: 'severity', operation: '<', value: 10 }, { severity: '9' })).toBe(true);
    expect(holds({ field: 'stage', operation: '!=', value: 'acute' }, disease)).toBe(false);
    expect(holds({ field: 'severity', operation: 'range', value: [1, 3] }, disease)).toBe(false);
    expect(holds({ field: 'severity', operation: 'range', value: [3, 4] }, disease)).toBe(true);
    expect(holds({ field: 'severity', operation: 'out_range', value: [1, 3] }, disease)).toBe(true);
  });

  it('when in, like, contain and prefix are asked, they match as ontology-query means them', () => {
    expect(holds({ field: 'stage', operation: 'in', value: ['acute', 'severe'] }, disease)).toBe(true);
    expect(holds({ field: 'stage', operation: 'not_in', value: ['acute'] }, disease)).toBe(false);
    expect(holds({ field: 'disease_id', operation: 'like', value: 'disease\\_%1' }, disease)).toBe(true);
    expect(holds({ field: 'disease_id', operation: 'like', value: 'disease_00000_' }, disease)).toBe(true);
    expect(holds({ field: 'disease_id', operation: 'not_like', value: '%2' }, disease)).toBe(true);
    expect(holds({ field: 'tags', operation: 'contain', value: 'rare' }, disease)).toBe(true);
    expect(holds({ field: 'tags', operation: 'contain', value: ['rare', 'common'] }, disease)).toBe(false);
    expect(holds({ field: 'disease_id', operation: 'prefix', value: 'disease_' }, disease)).toBe(true);
  });

  it('when a field is absent, presence tests say so and comparisons do not hold', () => {
    expect(holds({ field: 'ward', operation: 'exist' }, disease)).toBe(false);
    expect(holds({ field: 'ward', operation: 'not_exist' }, disease)).toBe(true);
    expect(holds({ field: 'ward', operation: 'empty' }, disease)).toBe(true);
    expect(holds({ field: 'ward', operation: '==', value: 'x' }, disease)).toBe(false);
    expect(holds({ field: 'ward', operation: '>', value: 1 }, disease)).toBe(false);
    expect(holds({ field: 'flag', operation: 'true' }, { flag: 'true' })).toBe(true);
  });

  it('when and/or combine sub_conditions and value_from is field, the whole tree is evaluated', () => {
    const condition = {
      operation: 'and',
      sub_conditions: [
        { field: 'account_type', operation: '==', value: 'user' },
        {
          operation: 'or',
          sub_conditions: [
            { field: 'severity', operation: '>', value: 5 },
            { field: 'owner', operation: '==', value_from: 'field', value: 'account_id' },
          ],
        },
      ],
    };
    expect(holds(condition, { ...disease, account_type: 'user', account_id: 'a1', owner: 'a1' })).toBe(true);
    expect(holds(condition, { ...disease, account_type: 'user', account_id: 'a1', owner: 'a2' })).toBe(false);
    expect(holds(condition, { ...disease, account_type: 'org', account_id: 'a1', owner: 'a1' })).toBe(false);
  });

  it('when like meets a pattern that would make a backtracking regex explode, its work stays within the product of the lengths', () => {
    const pattern = `${'%a'.repeat(50)}b`;
    const value = 'a'.repeat(20_000);
    expect(holds({ field: 'v', operation: 'like', value: pattern }, { v: value })).toBe(false);
    // Steps are counted, not timed: the bound is the same on any machine under any load.
    const { matches, steps } = matchLike(value, pattern);
    expect(matches).toBe(false);
    expect(steps).toBeLessThanOrEqual((value.length + 1) * (pattern.length + 1));
    const quarter = matchLike(value.slice(0, value.length / 4), pattern);
    expect(steps / quarter.steps).toBeLessThan(4.5);
  });

  it.each([
    [{ field: 'x', operation: 'regex', value: '(a+)+$' }, 'operation', /"regex" cannot be evaluated/],
    [{ field: 'x', operation: 'knn', value: [1] }, 'operation', /cannot be evaluated/],
    [
      { operation: 'and', sub_conditions: [{ field: 'x', operation: '==' }] },
      'sub_conditions[0].value',
      /needs a value/,
    ],
    [{ operation: 'or', sub_conditions: [] }, 'sub_conditions', /non-empty/],
    [{ operation: '==', value: 1 }, 'field', /field name is required/],
    [{ field: 'x', operation: 'in', value: 'a' }, 'value', /list of values/],
    [{ field: 'x', operation: 'range', value: [1] }, 'value', /\[low, high\]/],
    [
      { field: 'x', operation: '==', value: 'a', value_from: 'user' },
      'value_from',
      /"user" cannot be evaluated/,
    ],
    [{ field: 'x', operation: '==', value: { a: 1 } }, 'value', /string, number or boolean/],
    ['stage == acute', '', /must be an object/],
  ])('when the condition is %j, it is refused naming %s', (condition, path, message) => {
    const error = syntaxError(condition);
    expect(error.path).toBe(path);
    expect(error.problem).toMatch(message);
  });

  it('when sub_conditions nest deeper than the bound, the condition is refused, not a stack overflow', () => {
    let condition: unknown = { field: 'x', operation: 'exist' };
    for (let depth = 0; depth < 10_000; depth += 1)
      condition = { operation: 'and', sub_conditions: [condition] };
    const error = syntaxError(condition);
    expect(error.problem).toBe(`nested deeper than ${MAX_CONDITION_DEPTH}`);
  });
});
