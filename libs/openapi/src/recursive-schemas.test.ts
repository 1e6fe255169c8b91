// Recursive types stay exact through the function's own `$defs`, `$ref: "#"` and `$recursiveRef` name the
// schema they sit in, and a large schema used several times in one function is emitted once.

import { describe, expect, it } from 'vitest';
import type { OperationConversion } from './conversion.js';
import { convertDocument, convertOperation } from './document-converter.js';
import { NoteCode } from './notes.js';
import type { ConversionOptions } from './options.js';
import { buildRequestParts } from './request-builder.js';
import { jsonBody, oneOperation } from './__fixtures__/documents.js';
import { schemaProblems, strictProblems, validationError } from './__fixtures__/schema-check.js';

function convert(document: unknown, options?: ConversionOptions): OperationConversion {
  const conversion = convertOperation(document, { operationId: 'op' }, options);
  expect(schemaProblems(conversion.name, conversion.parameters)).toEqual([]);
  return conversion;
}

/** `{name, children: [{name, children: [...]}]}` nested `depth` levels, the deepest leaf's name `leaf`. */
function deepTree(depth: number, leaf: unknown = 'leaf'): Record<string, unknown> {
  let node: Record<string, unknown> = { name: leaf, children: [] };
  for (let level = 0; level < depth; level++) node = { name: `n${level}`, children: [node] };
  return node;
}

const treeDocument = oneOperation(
  'post',
  '/nodes',
  { requestBody: jsonBody({ $ref: '#/components/schemas/Node' }) },
  {
    Node: {
      type: 'object',
      description: 'A tree node.',
      required: ['name'],
      properties: {
        name: { type: 'string' },
        children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
      },
    },
  },
);

describe('recursive schemas', () => {
  it('when a schema refers to itself, a 60-level instance validates and a wrong leaf 60 levels down is refused', () => {
    const conversion = convert(treeDocument);
    expect(conversion.parameters.$defs?.Node).toBeDefined();
    expect(conversion.parameters.properties.children).toEqual({
      type: 'array',
      items: { $ref: '#/$defs/Node' },
    });
    expect(conversion.notes.map((note) => note.code)).not.toContain(NoteCode.RECURSION_CUT);
    const { name, children } = deepTree(60);
    expect(validationError(conversion.parameters, { name, children })).toBeUndefined();
    const wrong = deepTree(60, 42);
    expect(validationError(conversion.parameters, { name: wrong.name, children: wrong.children })).toMatch(
      /name must be string/,
    );
    const missing = deepTree(60) as { children: Array<Record<string, unknown>> };
    let cursor = missing.children[0]!;
    for (let level = 0; level < 30; level++) cursor = (cursor.children as Array<Record<string, unknown>>)[0]!;
    delete cursor.name;
    expect(validationError(conversion.parameters, missing)).toMatch(/must have required property 'name'/);
  });

  it('when two schemas refer to each other, both stay exact and the result is the same alone or within the document', () => {
    const document = oneOperation(
      'post',
      '/forest',
      { requestBody: jsonBody({ $ref: '#/components/schemas/Forest' }) },
      {
        Tree: {
          type: 'object',
          properties: {
            label: { type: 'integer' },
            forest: { $ref: '#/components/schemas/Forest' },
          },
        },
        Forest: {
          type: 'object',
          properties: { trees: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } },
        },
      },
    );
    const conversion = convert(document);
    expect(Object.keys(conversion.parameters.$defs ?? {}).sort()).toEqual(['Forest', 'Tree']);
    const deep = {
      trees: [{ label: 1, forest: { trees: [{ label: 2, forest: { trees: [{ label: 3 }] } }] } }],
    };
    expect(validationError(conversion.parameters, deep)).toBeUndefined();
    const bad = {
      trees: [{ label: 1, forest: { trees: [{ label: 2, forest: { trees: [{ label: 'x' }] } }] } }],
    };
    expect(validationError(conversion.parameters, bad)).toMatch(/label must be integer/);
    expect(convertDocument(document).operations[0]).toEqual(conversion);
  });

  it('when a schema says $ref: "#", it points at the schema it sits in, exactly, instead of accepting anything', () => {
    const document = oneOperation(
      'post',
      '/comments',
      { requestBody: jsonBody({ $ref: '#/components/schemas/Comment' }) },
      {
        Comment: {
          type: 'object',
          required: ['text'],
          properties: { text: { type: 'string' }, replies: { type: 'array', items: { $ref: '#' } } },
        },
      },
    );
    const conversion = convert(document);
    expect(conversion.parameters.properties.replies).toEqual({
      type: 'array',
      items: { $ref: '#/$defs/Comment' },
    });
    expect(
      validationError(conversion.parameters, {
        text: 'a',
        replies: [{ text: 'b', replies: [{ text: 'c' }] }],
      }),
    ).toBeUndefined();
    expect(validationError(conversion.parameters, { text: 'a', replies: [{ replies: [] }] })).toBeDefined();
  });

  it('when a 2019-09 schema uses $recursiveRef: "#" under $recursiveAnchor, it resolves to the outermost anchored schema', () => {
    const document = oneOperation(
      'post',
      '/trees',
      { requestBody: jsonBody({ $ref: '#/components/schemas/StrictTree' }) },
      {
        Tree: {
          $recursiveAnchor: true,
          type: 'object',
          properties: { data: {}, children: { type: 'array', items: { $recursiveRef: '#' } } },
        },
        StrictTree: {
          $recursiveAnchor: true,
          type: 'object',
          properties: {
            data: { type: 'string' },
            children: { type: 'array', items: { $recursiveRef: '#' } },
          },
        },
      },
    );
    const conversion = convert(document);
    expect(conversion.parameters.properties.children).toEqual({
      type: 'array',
      items: { $ref: '#/$defs/StrictTree' },
    });
    expect(validationError(conversion.parameters, { data: 'a', children: [{ data: 'b' }] })).toBeUndefined();
    expect(validationError(conversion.parameters, { data: 'a', children: [{ data: 5 }] })).toBeDefined();
  });

  it('when $ref: "#" sits in a schema written inline in the operation, a note says so instead of a silent {}', () => {
    const conversion = convert(
      oneOperation('post', '/x', {
        requestBody: jsonBody({ type: 'object', properties: { self: { $ref: '#' } } }),
      }),
    );
    expect(conversion.notes).toContainEqual(
      expect.objectContaining({ code: NoteCode.UNRESOLVED_REF, message: expect.stringContaining('"#"') }),
    );
    expect(conversion.parameters.properties.self?.description).toMatch(/enclosing schema/);
  });

  it('when the only self-reference of a recursive body is readOnly (not sent), no unused $defs entry is left', () => {
    const conversion = convert(
      oneOperation(
        'post',
        '/folders',
        { requestBody: jsonBody({ $ref: '#/components/schemas/Folder' }) },
        {
          Folder: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              parent: { allOf: [{ $ref: '#/components/schemas/Folder' }], readOnly: true },
            },
          },
        },
      ),
    );
    expect(conversion.parameters.properties).toEqual({ name: { type: 'string' } });
    expect(conversion.parameters.$defs).toBeUndefined();
  });

  it('when the strict variant has a recursive type, its $defs are closed too and nulls for absent fields are dropped at any depth', () => {
    const strict = convert(treeDocument, { strict: true });
    expect(strictProblems(strict.parameters)).toEqual([]);
    const args = { name: 'root', children: [{ name: 'a', children: [{ name: 'b', children: null }] }] };
    expect(validationError(strict.parameters, args)).toBeUndefined();
    const request = buildRequestParts(strict, args);
    expect(request.body).toMatchObject({
      kind: 'json',
      value: { name: 'root', children: [{ name: 'a', children: [{ name: 'b' }] }] },
    });
  });
});

describe('schemas used many times', () => {
  const address = {
    type: 'object',
    required: ['street', 'city', 'country'],
    properties: {
      street: { type: 'string', description: 'Street and number, as printed on a letter to this address.' },
      city: { type: 'string', description: 'City or town name, without the postal code.' },
      postal_code: { type: 'string', description: 'Postal code, in the format of the country.' },
      country: { type: 'string', description: 'ISO 3166-1 alpha-2 country code, e.g. DE.' },
    },
  };
  const document = oneOperation(
    'post',
    '/orders',
    {
      requestBody: jsonBody({
        type: 'object',
        properties: {
          billing: { $ref: '#/components/schemas/Address' },
          shipping: { $ref: '#/components/schemas/Address' },
          pickups: { type: 'array', items: { $ref: '#/components/schemas/Address' } },
          note: { type: 'string' },
        },
      }),
    },
    { Address: address },
  );

  it('when one schema is used several times, it is emitted once under $defs, named after its component, and every use points at it', () => {
    const conversion = convert(document);
    const { properties, $defs } = conversion.parameters;
    expect(Object.keys($defs ?? {})).toEqual(['Address']);
    expect(properties.billing).toEqual({ $ref: '#/$defs/Address' });
    expect(properties.shipping).toEqual({ $ref: '#/$defs/Address' });
    expect(properties.pickups).toEqual({ type: 'array', items: { $ref: '#/$defs/Address' } });
    expect(JSON.stringify(conversion.parameters).match(/Street and number/g)).toHaveLength(1);
    const inline = convert(document, { refs: 'inline' });
    expect(JSON.stringify(conversion.parameters).length).toBeLessThan(
      JSON.stringify(inline.parameters).length / 2,
    );
    const good = { street: 'Main 1', city: 'X', country: 'DE' };
    expect(validationError(conversion.parameters, { billing: good, pickups: [good] })).toBeUndefined();
    expect(validationError(conversion.parameters, { billing: good, pickups: [{ city: 'X' }] })).toBeDefined();
  });

  it('when two shared components have the same name, the second met is numbered, the same on every run', () => {
    // `#/components/schemas/Address` and `#/x-legacy/Address` both display as "Address".
    const twoAddresses = {
      openapi: '3.0.3',
      info: { title: 't', version: '1' },
      paths: {
        '/orders': {
          post: {
            operationId: 'op',
            requestBody: jsonBody({
              type: 'object',
              properties: {
                billing: { $ref: '#/components/schemas/Address' },
                shipping: { $ref: '#/components/schemas/Address' },
                old_billing: { $ref: '#/x-legacy/Address' },
                old_shipping: { $ref: '#/x-legacy/Address' },
              },
            }),
            responses: { '200': { description: 'ok' } },
          },
        },
      },
      components: { schemas: { Address: address } },
      'x-legacy': {
        Address: { ...address, description: 'An address in the old format, kept for old clients.' },
      },
    };
    const first = convert(twoAddresses);
    const { properties, $defs } = first.parameters;
    expect(Object.keys($defs ?? {}).sort()).toEqual(['Address', 'Address_2']);
    expect(properties.billing).toEqual(properties.shipping);
    expect(properties.old_billing).toEqual(properties.old_shipping);
    expect(properties.billing).not.toEqual(properties.old_billing);
    expect($defs?.[(properties.old_billing!.$ref ?? '').slice('#/$defs/'.length)]?.description).toMatch(
      /old format/,
    );
    expect(convert(twoAddresses).parameters).toEqual(first.parameters);
  });

  it('when a repeated schema is written inline, not as a component, it is named after the first property holding it', () => {
    const inline = oneOperation('post', '/orders', {
      requestBody: jsonBody({
        type: 'object',
        properties: { billing: address, shipping: address },
      }),
    });
    const { properties, $defs } = convert(inline).parameters;
    expect(Object.keys($defs ?? {})).toEqual(['billing']);
    expect(properties.shipping).toEqual({ $ref: '#/$defs/billing' });
  });

  it('when a small schema repeats, it stays inline (a $ref would not make the function smaller)', () => {
    const small = oneOperation('post', '/p', {
      requestBody: jsonBody({
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'string' }, c: { type: 'string' } },
      }),
    });
    expect(convert(small).parameters.$defs).toBeUndefined();
  });

  it('when refs: inline is asked for, there is no $ref at all', () => {
    const inline = convert(document, { refs: 'inline' });
    expect(JSON.stringify(inline.parameters)).not.toContain('$ref');
    expect(JSON.stringify(convert(treeDocument, { refs: 'inline' }).parameters)).not.toContain('$ref');
  });
});
