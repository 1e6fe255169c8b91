// The per-function size budget: a huge tool is brought under it by shortening words (deepest first), never
// by dropping a parameter, and says so in its notes; a small tool is left exactly as it was.

import { describe, expect, it } from 'vitest';
import { convertOperation } from './document-converter.js';
import { functionBytes, measuredFunctionBytes, type BudgetedFunction } from './function-budget.js';
import type { JsonSchema } from './json-schema.js';
import { NoteCode } from './notes.js';
import { jsonBody, oneOperation } from './__fixtures__/documents.js';
import { schemaProblems } from './__fixtures__/schema-check.js';
import { SchemaMeasures } from './shared-schemas.js';

const LONG = (what: string): string =>
  `${what}. ${'This field is described at length, as Kubernetes does for every field of every object it defines. '.repeat(6)}`;

/**
 * A Kubernetes-like create call: a `spec` of 60 fields, each an object of 12 described fields with
 * examples, two levels down, plus query parameters — some 200 KiB of JSON when every word is kept.
 */
function kubernetesLikeDocument(): unknown {
  const leaf = (i: number, j: number): Record<string, unknown> => ({
    type: 'string',
    description: LONG(`Leaf ${i}.${j}`),
    example: `value-${i}-${j}`,
  });
  const groups: Record<string, unknown> = {};
  for (let i = 0; i < 60; i++) {
    const fields: Record<string, unknown> = {};
    for (let j = 0; j < 12; j++) fields[`field_${j}`] = leaf(i, j);
    groups[`group_${i}`] = { type: 'object', description: LONG(`Group ${i}`), properties: fields };
  }
  return oneOperation('post', '/apis/apps/v1/namespaces/{namespace}/deployments', {
    description: LONG('Create a Deployment'),
    parameters: [
      {
        name: 'namespace',
        in: 'path',
        required: true,
        schema: { type: 'string' },
        description: LONG('Namespace'),
      },
      { name: 'dryRun', in: 'query', schema: { type: 'string' }, description: LONG('Dry run') },
      { name: 'fieldManager', in: 'query', schema: { type: 'string' }, description: LONG('Field manager') },
    ],
    requestBody: jsonBody({
      type: 'object',
      description: LONG('A Deployment'),
      properties: {
        metadata: { type: 'object', description: LONG('Metadata'), properties: { name: { type: 'string' } } },
        spec: { type: 'object', description: LONG('The spec'), properties: groups },
      },
    }),
  });
}

/** Every property path (`spec.group_3.field_7`) of a function's parameters. */
function propertyPaths(properties: Record<string, JsonSchema>, prefix = ''): string[] {
  return Object.entries(properties).flatMap(([name, schema]) => [
    `${prefix}${name}`,
    ...propertyPaths(schema.properties ?? {}, `${prefix}${name}.`),
  ]);
}

describe('per-function size budget', () => {
  it('when a Kubernetes-like tool is far over 32 KiB, it is brought under with every parameter kept and a note', () => {
    const document = kubernetesLikeDocument();
    const unlimited = convertOperation(document, { operationId: 'op' }, { maxFunctionBytes: Infinity });
    expect(functionBytes(unlimited)).toBeGreaterThan(150 * 1024);

    const budgeted = convertOperation(document, { operationId: 'op' });
    expect(functionBytes(budgeted)).toBeLessThanOrEqual(32 * 1024);
    expect(schemaProblems(budgeted.name, budgeted.parameters)).toEqual([]);
    // Nothing structural is lost: the same properties, required lists, types and bindings.
    expect(propertyPaths(budgeted.parameters.properties)).toEqual(
      propertyPaths(unlimited.parameters.properties),
    );
    expect(propertyPaths(budgeted.parameters.properties)).toHaveLength(3 + 2 + 1 + 60 + 60 * 12);
    expect(budgeted.parameters.required).toEqual(unlimited.parameters.required);
    expect(budgeted.arguments).toEqual(unlimited.arguments);
    const note = budgeted.notes.find((n) => n.code === NoteCode.SIZE_BUDGET);
    expect(note?.message).toMatch(/over its 32\.0 KiB budget/);
    expect(note?.message).toMatch(/now \d+(\.\d)? KiB/);
    expect(unlimited.notes.some((n) => n.code === NoteCode.SIZE_BUDGET)).toBe(false);
  });

  it('when words must go, the deepest ones go first: the leaves lose theirs while the arguments keep theirs whole', () => {
    const budgeted = convertOperation(document(), { operationId: 'op' });
    const spec = budgeted.parameters.properties.spec!;
    const leaf = spec.properties!.group_0!.properties!.field_0!;
    expect(leaf.examples).toBeUndefined();
    expect((leaf.description ?? '').length).toBeLessThanOrEqual(120);
    // The top-level arguments' descriptions are untouched.
    expect(budgeted.parameters.properties.namespace!.description).toBe(LONG('Namespace').trim());
    expect(budgeted.parameters.properties.dryRun!.description).toBe(LONG('Dry run').trim());

    function document(): unknown {
      return kubernetesLikeDocument();
    }
  });

  it('when the budget is set lower than the structure alone, every parameter is still kept and the note says it is still over', () => {
    const budgeted = convertOperation(
      kubernetesLikeDocument(),
      { operationId: 'op' },
      { maxFunctionBytes: 4096 },
    );
    expect(propertyPaths(budgeted.parameters.properties)).toHaveLength(3 + 2 + 1 + 60 + 60 * 12);
    const note = budgeted.notes.find((n) => n.code === NoteCode.SIZE_BUDGET);
    expect(note?.message).toMatch(
      /still .* KiB: its parameters alone exceed the budget, and none is dropped/,
    );
    expect(note?.message).toMatch(/descriptions dropped at depth 1 and below/);
  });

  it('when a tool is small, it is untouched: the same function as with no budget, and no note', () => {
    const small = oneOperation('get', '/pets/{id}', {
      description: 'Get a pet.',
      parameters: [
        {
          name: 'id',
          in: 'path',
          required: true,
          schema: { type: 'string', example: 'p1' },
          description: 'The id.',
        },
      ],
    });
    const budgeted = convertOperation(small, { operationId: 'op' });
    const unlimited = convertOperation(small, { operationId: 'op' }, { maxFunctionBytes: Infinity });
    expect(budgeted).toEqual(unlimited);
    expect(budgeted.parameters.properties.id).toEqual({
      type: 'string',
      description: 'The id.',
      examples: ['p1'],
    });
    expect(budgeted.notes.some((n) => n.code === NoteCode.SIZE_BUDGET)).toBe(false);
  });

  it('when a function is weighed from cached measures, the size is exactly that of its JSON text, edits included', () => {
    const shared: JsonSchema = { type: 'string', description: 'Ünïcödé — “quoted” \\ "escaped" \n 🐾' };
    const fn: BudgetedFunction = {
      name: 'pets_create',
      description: 'Crée un animal. 动物',
      parameters: {
        type: 'object',
        properties: {
          name: shared,
          tags: { type: 'array', items: shared, examples: [['a', 'ß']] },
          owner: {
            type: 'object',
            properties: {
              id: { type: 'integer', minimum: 1 },
              nick: { description: undefined, type: 'string' },
            },
            required: ['id'],
            additionalProperties: { anyOf: [shared, { type: 'null' }] },
          },
          pet: { $ref: '#/$defs/Pet' },
        },
        required: ['name'],
        $defs: { Pet: { type: 'object', properties: { kind: { enum: ['cat', 'dög', null] } } } },
      },
    };
    const measures = new SchemaMeasures(300);
    const weigh = measuredFunctionBytes(measures);
    expect(weigh(fn)).toBe(functionBytes(fn));
    // An edit copies what it changes; the untouched parts are weighed from the cache.
    const edited: BudgetedFunction = {
      ...fn,
      parameters: {
        ...fn.parameters,
        properties: { ...fn.parameters.properties, name: { type: 'string', description: 'Ñame' } },
      },
    };
    expect(weigh(edited)).toBe(functionBytes(edited));
    const huge = convertOperation(
      kubernetesLikeDocument(),
      { operationId: 'op' },
      { maxFunctionBytes: Infinity },
    );
    expect(weigh(huge)).toBe(functionBytes(huge));
  });
});
