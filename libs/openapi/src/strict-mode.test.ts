// The OpenAI structured-outputs variant: closed objects, everything required, optional made nullable.

import { describe, expect, it } from 'vitest';
import { convertOperation } from './document-converter.js';
import type { JsonSchema } from './json-schema.js';
import { buildRequestParts } from './request-builder.js';
import { toOpenAiTool } from './openai-tool.js';
import { jsonBody, oneOperation } from './__fixtures__/documents.js';
import { schemaProblems, strictProblems, validationError } from './__fixtures__/schema-check.js';

const document = oneOperation('post', '/orders/{id}', {
  parameters: [
    { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
    { name: 'dry_run', in: 'query', schema: { type: 'boolean', default: false } },
  ],
  requestBody: jsonBody({
    type: 'object',
    required: ['items'],
    properties: {
      items: {
        type: 'array',
        minItems: 1,
        items: {
          type: 'object',
          required: ['sku'],
          properties: {
            sku: { type: 'string', minLength: 3 },
            note: { type: 'string', nullable: true },
            qty: { type: 'integer' },
          },
        },
      },
      metadata: { type: 'object', additionalProperties: { type: 'string' } },
      anything: {},
    },
  }),
});

function everyObject(schema: JsonSchema, visit: (object: JsonSchema) => void): void {
  if (schema.properties) {
    visit(schema);
    for (const child of Object.values(schema.properties)) everyObject(child, visit);
  }
  if (schema.items) everyObject(schema.items, visit);
  for (const branch of schema.anyOf ?? []) everyObject(branch, visit);
}

describe('strict mode', () => {
  const conversion = convertOperation(document, { operationId: 'op' }, { strict: true });

  it('when strict is asked for, every object is closed and lists every property as required', () => {
    expect(schemaProblems(conversion.name, conversion.parameters)).toEqual([]);
    const objects: JsonSchema[] = [];
    everyObject(conversion.parameters, (object) => objects.push(object));
    expect(objects.length).toBeGreaterThanOrEqual(3);
    for (const object of objects) {
      expect(object.additionalProperties).toBe(false);
      expect(object.required).toEqual(Object.keys(object.properties ?? {}));
    }
    expect(toOpenAiTool(conversion).function.strict).toBe(true);
  });

  it('when a property was optional, it becomes nullable; unsupported keywords go (defaults move to the description)', () => {
    const { properties } = conversion.parameters;
    expect(properties.id).toEqual({ type: 'string' });
    expect(properties.dry_run).toEqual({ type: ['boolean', 'null'], description: 'Default: false.' });
    const item = properties.items?.items;
    expect(item?.properties?.sku).toEqual({ type: 'string' });
    expect(item?.properties?.qty).toEqual({ type: ['integer', 'null'] });
    // Already nullable in the API: null stays a real value, not "absent".
    expect(item?.properties?.note).toEqual({ type: ['string', 'null'] });
    expect(properties.metadata).toEqual({
      type: ['object', 'null'],
      properties: {},
      required: [],
      additionalProperties: false,
    });
    expect(properties.anything).toEqual({ type: ['string', 'number', 'boolean', 'null'] });
    expect(conversion.notes.map((note) => note.code)).toContain('strict_adjusted');
  });

  it('when the model fills optional arguments with null, the request leaves them out (but keeps API nulls)', () => {
    const args = {
      id: 'o1',
      dry_run: null,
      items: [{ sku: 'abc', note: null, qty: null }],
      metadata: null,
      anything: null,
    };
    expect(validationError(conversion.parameters, args)).toBeUndefined();
    const request = buildRequestParts(conversion, args);
    expect(request.query).toEqual([]);
    expect(request.body).toEqual({
      kind: 'json',
      value: { items: [{ sku: 'abc', note: null }] },
      text: '{"items":[{"sku":"abc","note":null}]}',
    });
  });

  it('when strict is not asked for, optional properties stay optional and open', () => {
    const loose = convertOperation(document, { operationId: 'op' });
    expect(loose.parameters.required).toEqual(['id', 'items']);
    expect(loose.parameters.additionalProperties).toBeUndefined();
    expect(loose.nullAsAbsent).toBeUndefined();
  });
});

describe('strict mode over unions', () => {
  // allOf [Base, oneOf [Card, Bank]]: the merge gives an object with its own properties beside an anyOf.
  const unionDocument = oneOperation(
    'post',
    '/payments',
    {
      requestBody: jsonBody({
        type: 'object',
        required: ['method'],
        properties: {
          method: {
            allOf: [
              { $ref: '#/components/schemas/Base' },
              { oneOf: [{ $ref: '#/components/schemas/Card' }, { $ref: '#/components/schemas/Bank' }] },
            ],
          },
          fallback: {
            type: 'object',
            nullable: true,
            properties: { note: { type: 'string' } },
            anyOf: [
              { required: ['note'] },
              { properties: { code: { type: 'integer' } }, required: ['code'] },
            ],
          },
        },
      }),
    },
    {
      Base: { type: 'object', required: ['amount'], properties: { amount: { type: 'integer' } } },
      Card: { type: 'object', required: ['card_number'], properties: { card_number: { type: 'string' } } },
      Bank: { type: 'object', required: ['iban'], properties: { iban: { type: 'string' } } },
    },
  );
  const strict = convertOperation(unionDocument, { operationId: 'op' }, { strict: true });

  it('when an object wraps an anyOf, every object, inside each branch too, is closed with every property required', () => {
    expect(schemaProblems(strict.name, strict.parameters)).toEqual([]);
    expect(strictProblems(strict.parameters)).toEqual([]);
    expect(strict.notes.map((note) => note.message)).toContainEqual(
      expect.stringContaining('moved into each branch'),
    );
  });

  it('when the wrapper is distributed, the branches accept what the API accepts and refuse mixing in unknown fields', () => {
    const base = { fallback: null };
    expect(
      validationError(strict.parameters, { ...base, method: { amount: 5, card_number: '4111' } }),
    ).toBeUndefined();
    expect(
      validationError(strict.parameters, { ...base, method: { amount: 5, iban: 'DE00' } }),
    ).toBeUndefined();
    expect(
      validationError(strict.parameters, { ...base, method: { amount: 5, card_number: '4', extra: 1 } }),
    ).toBeDefined();
    expect(validationError(strict.parameters, { ...base, method: { card_number: '4111' } })).toBeDefined();
    const fallback = { note: 'x' };
    expect(
      validationError(strict.parameters, { method: { amount: 1, iban: 'x' }, fallback }),
    ).toBeUndefined();
    const request = buildRequestParts(strict, { method: { amount: 1, iban: 'x' }, fallback: null });
    expect(request.body).toMatchObject({ kind: 'json', value: { method: { amount: 1, iban: 'x' } } });
  });
});
