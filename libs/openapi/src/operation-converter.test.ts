// The hard cases of OpenAPI → function conversion, each named after the case and what the model gets.

import { describe, expect, it } from 'vitest';
import type { OperationConversion } from './conversion.js';
import { convertDocument, convertOperation } from './document-converter.js';
import type { JsonSchema } from './json-schema.js';
import { NoteCode } from './notes.js';
import type { ConversionOptions } from './options.js';
import { jsonBody, oneOperation, openApi } from './__fixtures__/documents.js';
import { schemaProblems, validationError } from './__fixtures__/schema-check.js';

function convert(document: unknown, options?: ConversionOptions): OperationConversion {
  const conversion = convertOperation(document, { operationId: 'op' }, options);
  expect(schemaProblems(conversion.name, conversion.parameters)).toEqual([]);
  return conversion;
}

const codes = (conversion: OperationConversion): string[] => conversion.notes.map((note) => note.code);
const prop = (conversion: OperationConversion, name: string): JsonSchema => {
  const schema = conversion.parameters.properties[name];
  if (!schema)
    throw new Error(`no property ${name} in ${Object.keys(conversion.parameters.properties).join(', ')}`);
  return schema;
};

describe('$ref resolution', () => {
  it('with refs: inline, when a schema refers to itself (cyclic ref), it is expanded once and the repeat becomes a described stub', () => {
    const conversion = convert(
      oneOperation(
        'post',
        '/nodes',
        { requestBody: jsonBody({ $ref: '#/components/schemas/Node' }) },
        {
          Node: {
            type: 'object',
            description: 'A tree node. Has children.',
            properties: {
              name: { type: 'string' },
              children: { type: 'array', items: { $ref: '#/components/schemas/Node' } },
            },
          },
        },
      ),
      { refs: 'inline' },
    );
    const children = prop(conversion, 'children');
    expect(children.items?.type).toBe('object');
    expect(children.items?.properties).toBeUndefined();
    expect(children.items?.description).toBe('A tree node. Recursive Node; not expanded further.');
    expect(codes(conversion)).toContain(NoteCode.RECURSION_CUT);
  });

  it('with refs: inline, when mutually recursive schemas are allowed two expansions, the cut comes one level deeper', () => {
    const document = oneOperation(
      'post',
      '/a',
      { requestBody: jsonBody({ $ref: '#/components/schemas/A' }) },
      {
        A: { type: 'object', properties: { b: { $ref: '#/components/schemas/B' } } },
        B: { type: 'object', properties: { a: { $ref: '#/components/schemas/A' } } },
      },
    );
    const once = convert(document, { refs: 'inline' });
    expect(prop(once, 'b').properties?.a?.properties).toBeUndefined();
    const twice = convert(document, { refs: 'inline', recursionDepth: 2 });
    expect(prop(twice, 'b').properties?.a?.properties?.b?.properties?.a?.properties).toBeUndefined();
    expect(prop(twice, 'b').properties?.a?.properties?.b?.type).toBe('object');
  });

  it('when refs name parameters and request bodies in components, they are resolved like schemas', () => {
    const document = openApi(
      {
        '/pets/{petId}': {
          put: {
            operationId: 'op',
            parameters: [{ $ref: '#/components/parameters/PetId' }],
            requestBody: { $ref: '#/components/requestBodies/Pet' },
          },
        },
      },
      {
        parameters: { PetId: { name: 'petId', in: 'path', required: true, schema: { type: 'integer' } } },
        requestBodies: { Pet: jsonBody({ $ref: '#/components/schemas/Pet' }) },
        schemas: { Pet: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } },
      },
    );
    const conversion = convert(document);
    expect(conversion.parameters).toEqual({
      type: 'object',
      properties: { petId: { type: 'integer' }, name: { type: 'string' } },
      required: ['petId', 'name'],
    });
  });

  it('when a ref uses JSON-pointer escapes (~1 for "/", ~0 for "~"), it resolves to the escaped key', () => {
    const document = oneOperation(
      'post',
      '/x',
      {
        requestBody: jsonBody({ $ref: '#/components/schemas/a~1b~0c' }),
      },
      { 'a/b~c': { type: 'object', properties: { ok: { type: 'boolean' } } } },
    );
    expect(prop(convert(document), 'ok')).toEqual({ type: 'boolean' });
  });

  it('when a ref points nowhere, the value is described as unresolved and a note says why, without throwing', () => {
    const document = oneOperation('post', '/x', {
      requestBody: jsonBody({
        type: 'object',
        properties: { thing: { $ref: '#/components/schemas/Missing' } },
      }),
    });
    const conversion = convert(document);
    expect(prop(conversion, 'thing').description).toContain(
      'Unresolved reference #/components/schemas/Missing',
    );
    expect(codes(conversion)).toContain(NoteCode.UNRESOLVED_REF);
  });

  it('when example data contains "$ref" keys, they are data: not resolved, not rewritten, kept verbatim', () => {
    const example = {
      schemas: ['urn:scim'],
      members: [{ $ref: 'https://api.example.com/Users/1', value: '1' }],
    };
    const document = oneOperation('post', '/groups', {
      requestBody: {
        content: {
          'application/json': {
            schema: {
              type: 'object',
              properties: { members: { type: 'array', items: {}, example: example.members } },
            },
            example,
            examples: { scim: { value: { $ref: '#/components/schemas/DoesNotExist' } } },
          },
        },
      },
    });
    const before = structuredClone(document);
    const conversion = convert(document, { examples: 'all' });
    expect(document).toEqual(before);
    expect(prop(conversion, 'members').examples).toEqual([example.members]);
    expect(codes(conversion)).not.toContain(NoteCode.UNRESOLVED_REF);
  });
});

describe('allOf, unions and nullability', () => {
  it('when allOf branches are merged, properties and required lists are united', () => {
    const conversion = convert(
      oneOperation(
        'post',
        '/pets',
        { requestBody: jsonBody({ $ref: '#/components/schemas/Pet' }) },
        {
          NewPet: {
            type: 'object',
            required: ['name'],
            properties: { name: { type: 'string' }, tag: { type: 'string' } },
          },
          Pet: {
            allOf: [
              { $ref: '#/components/schemas/NewPet' },
              { required: ['id'], properties: { id: { type: 'integer' } } },
            ],
          },
        },
      ),
    );
    expect(Object.keys(conversion.parameters.properties)).toEqual(['name', 'tag', 'id']);
    expect(conversion.parameters.required).toEqual(['name', 'id']);
  });

  it('when allOf branches conflict on a type, the first wins and the conflict is reported as a note, not thrown', () => {
    const conversion = convert(
      oneOperation('post', '/x', {
        requestBody: jsonBody({
          allOf: [
            { type: 'object', properties: { size: { type: 'string' } } },
            { type: 'object', properties: { size: { type: 'integer', minimum: 1 } } },
          ],
        }),
      }),
    );
    expect(prop(conversion, 'size')).toEqual({ type: 'string', minimum: 1 });
    const note = conversion.notes.find((n) => n.code === NoteCode.ALLOF_CONFLICT);
    expect(note?.message).toBe('allOf branches disagree on type at "size": string vs integer; kept string');
  });

  it('when a property is oneOf several objects, it stays a union (anyOf) and the discriminator is explained', () => {
    const conversion = convert(
      oneOperation(
        'post',
        '/pets',
        {
          requestBody: jsonBody({
            type: 'object',
            properties: {
              pet: {
                oneOf: [{ $ref: '#/components/schemas/Cat' }, { $ref: '#/components/schemas/Dog' }],
                discriminator: { propertyName: 'petType' },
              },
            },
          }),
        },
        {
          Cat: { type: 'object', properties: { petType: { type: 'string' }, lives: { type: 'integer' } } },
          Dog: { type: 'object', properties: { petType: { type: 'string' }, bark: { type: 'boolean' } } },
        },
      ),
    );
    const pet = prop(conversion, 'pet');
    expect(pet.anyOf?.map((branch) => Object.keys(branch.properties ?? {}))).toEqual([
      ['petType', 'lives'],
      ['petType', 'bark'],
    ]);
    expect(pet.description).toBe('The "petType" property tells the variants apart.');
    expect(validationError(conversion.parameters, { pet: { petType: 'dog', bark: true } })).toBeUndefined();
  });

  it('when the target cannot take unions (unions: merge), the branches are merged and a note says so', () => {
    const conversion = convert(
      oneOperation('post', '/x', {
        requestBody: jsonBody({
          type: 'object',
          properties: {
            value: {
              anyOf: [
                { type: 'object', required: ['a'], properties: { a: { type: 'string' } } },
                { type: 'object', properties: { b: { type: 'integer' } } },
              ],
            },
          },
        }),
      }),
      { unions: 'merge' },
    );
    expect(prop(conversion, 'value')).toEqual({
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'integer' } },
    });
    expect(codes(conversion)).toContain(NoteCode.UNION_SIMPLIFIED);
  });

  it('when a union only lists alternative required properties, it becomes a sentence of the description', () => {
    const conversion = convert(
      oneOperation('patch', '/gists/{id}', {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: jsonBody({
          type: 'object',
          properties: { description: { type: 'string' }, files: { type: 'object' } },
          anyOf: [{ required: ['description'] }, { required: ['files'] }],
        }),
      }),
    );
    expect(Object.keys(conversion.parameters.properties)).toEqual(['id', 'description', 'files']);
    expect(conversion.notes.find((n) => n.code === NoteCode.UNION_SIMPLIFIED)?.message).toContain(
      'description | files',
    );
  });

  it('when a 3.0 schema is nullable, null joins its type (and its enum)', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [
          { name: 'note', in: 'query', schema: { type: 'string', nullable: true } },
          { name: 'mode', in: 'query', schema: { type: 'string', enum: ['a', 'b'], nullable: true } },
        ],
      }),
    );
    expect(prop(conversion, 'note')).toEqual({ type: ['string', 'null'] });
    expect(prop(conversion, 'mode')).toEqual({ type: ['string', 'null'], enum: ['a', 'b', null] });
  });

  it('when a property is `allOf: [$ref Self], nullable: true` (the .NET pattern), it is the referenced object or null', () => {
    const conversion = convert(
      oneOperation(
        'post',
        '/x',
        {
          requestBody: jsonBody({
            type: 'object',
            properties: {
              owner: {
                allOf: [{ $ref: '#/components/schemas/User' }],
                nullable: true,
                description: 'Owner, if any.',
              },
            },
          }),
        },
        { User: { type: 'object', description: 'A user.', properties: { login: { type: 'string' } } } },
      ),
    );
    expect(prop(conversion, 'owner')).toEqual({
      type: ['object', 'null'],
      description: 'Owner, if any.',
      properties: { login: { type: 'string' } },
    });
    expect(validationError(conversion.parameters, { owner: null })).toBeUndefined();
  });

  it('when a 3.1 schema uses type arrays, const and oneOf with null, they are kept as JSON Schema', () => {
    const document = oneOperation(
      'post',
      '/x',
      {
        requestBody: jsonBody({
          type: 'object',
          properties: {
            topic: { type: ['string', 'null'], maxLength: 10 },
            kind: { const: 'text' },
            parent: { oneOf: [{ $ref: '#/components/schemas/Ref' }, { type: 'null' }] },
          },
        }),
      },
      { Ref: { type: 'object', properties: { id: { type: 'string' } } } },
    );
    document.openapi = '3.1.0';
    const conversion = convert(document);
    expect(prop(conversion, 'topic')).toEqual({ type: ['string', 'null'], maxLength: 10 });
    expect(prop(conversion, 'kind')).toEqual({ const: 'text' });
    expect(prop(conversion, 'parent')).toEqual({
      type: ['object', 'null'],
      properties: { id: { type: 'string' } },
    });
  });

  it('when a union is all constants with titles (Discord enum style), it becomes one enum naming each value', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [
          {
            name: 'type',
            in: 'query',
            schema: {
              oneOf: [
                { title: 'GUILD_TEXT', const: 0 },
                { title: 'DM', const: 1 },
              ],
              type: 'integer',
            },
          },
        ],
      }),
    );
    expect(prop(conversion, 'type')).toEqual({
      type: 'integer',
      enum: [0, 1],
      description: 'Values: 0: GUILD_TEXT; 1: DM.',
    });
  });
});

describe('schema keywords', () => {
  it('when a body property is readOnly it is not asked for (nor required), while writeOnly ones are', () => {
    const conversion = convert(
      oneOperation('post', '/users', {
        requestBody: jsonBody({
          type: 'object',
          required: ['id', 'password'],
          properties: {
            id: { type: 'string', readOnly: true },
            password: { type: 'string', writeOnly: true },
          },
        }),
      }),
    );
    expect(conversion.parameters).toEqual({
      type: 'object',
      properties: { password: { type: 'string' } },
      required: ['password'],
    });
  });

  it('when an enum is longer than maxEnumValues, it becomes a free value whose description lists the first values', () => {
    const values = Array.from({ length: 300 }, (_, i) => `v${i}`);
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [{ name: 'code', in: 'query', schema: { type: 'string', enum: values } }],
      }),
    );
    expect(prop(conversion, 'code').enum).toBeUndefined();
    expect(prop(conversion, 'code').description).toMatch(
      /^One of 300 allowed values, e\.g\. "v0", "v1", .*"v19", …$/,
    );
    expect(codes(conversion)).toContain(NoteCode.ENUM_BOUNDED);
  });

  it('when descriptions are longer than 1024 characters, they are cut with an ellipsis', () => {
    const long = 'word '.repeat(400);
    const conversion = convert(
      oneOperation('get', '/x', {
        description: long,
        parameters: [{ name: 'q', in: 'query', description: long, schema: { type: 'string' } }],
      }),
    );
    expect(conversion.description).toHaveLength(1024);
    expect(conversion.description.endsWith('…')).toBe(true);
    expect(prop(conversion, 'q').description?.length).toBeLessThanOrEqual(1024);
    expect(codes(conversion)).toContain(NoteCode.DESCRIPTION_TRUNCATED);
  });

  it('when 3.0-only keywords appear (exclusiveMinimum: true, example, discriminator, xml), valid 2020-12 comes out', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [
          {
            name: 'n',
            in: 'query',
            schema: { type: 'number', minimum: 0, exclusiveMinimum: true, example: 3, xml: { name: 'n' } },
          },
        ],
      }),
    );
    expect(prop(conversion, 'n')).toEqual({ type: 'number', exclusiveMinimum: 0, examples: [3] });
  });

  it('when nesting goes deeper than maxDepth, the deeper levels become described stubs', () => {
    const deep = {
      type: 'object',
      properties: {
        a: { type: 'object', properties: { b: { type: 'object', properties: { c: { type: 'string' } } } } },
      },
    };
    const conversion = convert(
      oneOperation('post', '/x', { requestBody: jsonBody({ type: 'object', properties: { root: deep } }) }),
      { maxDepth: 2 },
    );
    // root is level 1 (an argument), a level 2, b level 3.
    expect(prop(conversion, 'root').properties?.a?.properties?.b).toEqual({
      type: 'object',
      description: 'Nested deeper than 2 levels; not expanded.',
    });
    expect(codes(conversion)).toContain(NoteCode.DEPTH_LIMIT);
  });

  it('when a schema would exceed maxSchemaNodes, the rest becomes stubs and a size note is given (no exponential inlining)', () => {
    // Each level refers to the next one twice: fully inlined, 2^20 nodes.
    const schemas: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++) {
      schemas[`L${i}`] = {
        type: 'object',
        properties: {
          left: { $ref: `#/components/schemas/L${i + 1}` },
          right: { $ref: `#/components/schemas/L${i + 1}` },
        },
      };
    }
    schemas.L20 = { type: 'string' };
    const conversion = convert(
      oneOperation('post', '/x', { requestBody: jsonBody({ $ref: '#/components/schemas/L0' }) }, schemas),
      {
        maxSchemaNodes: 500,
        maxDepth: 30,
      },
    );
    expect(codes(conversion)).toContain(NoteCode.SIZE_LIMIT);
    expect(JSON.stringify(conversion.parameters).length).toBeLessThan(100_000);
  });
});

describe('arguments from every location, and name collisions', () => {
  it('when path and query both have "id", the path keeps "id" and the query one becomes "query_id"', () => {
    const conversion = convert(
      oneOperation('get', '/items/{id}', {
        parameters: [
          { name: 'id', in: 'query', schema: { type: 'string' }, description: 'version id' },
          { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
        ],
      }),
    );
    expect(conversion.arguments.map((b) => [b.property, b.in, b.name])).toEqual([
      ['id', 'path', 'id'],
      ['query_id', 'query', 'id'],
    ]);
    expect(prop(conversion, 'query_id')).toEqual({ type: 'string', description: 'version id' });
    expect(conversion.notes.find((n) => n.code === NoteCode.NAME_COLLISION)?.message).toBe(
      'query parameter "id" is exposed as "query_id" because "id" is taken by path parameter "id"',
    );
  });

  it('when query and header share a name, the header one becomes "header_<name>"', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [
          { name: 'trace', in: 'header', schema: { type: 'string' } },
          { name: 'trace', in: 'query', schema: { type: 'boolean' } },
        ],
      }),
    );
    expect(conversion.arguments.map((b) => [b.property, b.in])).toEqual([
      ['trace', 'query'],
      ['header_trace', 'header'],
    ]);
  });

  it('when the body has a property named like a path parameter, the body one becomes "body_<name>" and maps back', () => {
    const conversion = convert(
      oneOperation('put', '/user/{username}', {
        parameters: [{ name: 'username', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: jsonBody({
          type: 'object',
          required: ['username'],
          properties: { username: { type: 'string' }, email: { type: 'string' } },
        }),
      }),
    );
    expect(Object.keys(conversion.parameters.properties)).toEqual(['username', 'body_username', 'email']);
    expect(conversion.parameters.required).toEqual(['username', 'body_username']);
    expect(conversion.arguments.find((b) => b.property === 'body_username')).toEqual({
      property: 'body_username',
      in: 'body',
      name: 'username',
      required: true,
    });
  });

  it('when an operation parameter has the name and location of a path-item parameter, the operation one wins', () => {
    const document = openApi({
      '/x/{id}': {
        parameters: [
          {
            name: 'id',
            in: 'path',
            required: true,
            schema: { type: 'string' },
            description: 'from the path item',
          },
          { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
        ],
        get: {
          operationId: 'op',
          parameters: [
            {
              name: 'id',
              in: 'path',
              required: true,
              schema: { type: 'integer' },
              description: 'from the operation',
            },
          ],
        },
      },
    });
    const conversion = convert(document);
    expect(conversion.parameters.properties).toEqual({
      id: { type: 'integer', description: 'from the operation' },
      verbose: { type: 'boolean' },
    });
  });

  it('when a parameter is a cookie, it is an argument bound to the cookie', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: [{ name: 'session', in: 'cookie', required: true, schema: { type: 'string' } }],
      }),
    );
    expect(conversion.arguments).toEqual([
      { property: 'session', in: 'cookie', name: 'session', required: true, style: 'form', explode: true },
    ]);
    expect(conversion.parameters.required).toEqual(['session']);
  });

  it('when header parameters are Accept, Content-Type or Authorization, they are left to the HTTP client', () => {
    const conversion = convert(
      oneOperation('get', '/x', {
        parameters: ['Accept', 'Content-Type', 'Authorization', 'X-Tenant'].map((name) => ({
          name,
          in: 'header',
          schema: { type: 'string' },
        })),
      }),
    );
    expect(Object.keys(conversion.parameters.properties)).toEqual(['X-Tenant']);
    expect(codes(conversion).filter((c) => c === NoteCode.PARAMETER_IGNORED)).toHaveLength(3);
  });
});

describe('request bodies', () => {
  it('when a body is a form with nested objects, its properties are arguments and the encoding is bound', () => {
    const conversion = convert(
      oneOperation('post', '/v1/customers', {
        requestBody: {
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: {
                  email: { type: 'string' },
                  address: {
                    type: 'object',
                    properties: { city: { type: 'string' }, line1: { type: 'string' } },
                  },
                  expand: { type: 'array', items: { type: 'string' } },
                },
              },
              encoding: {
                address: { style: 'deepObject', explode: true },
                expand: { style: 'deepObject', explode: true },
              },
            },
          },
        },
      }),
    );
    expect(conversion.body).toEqual({
      contentType: 'application/x-www-form-urlencoded',
      kind: 'form',
      required: false,
      whole: false,
    });
    expect(prop(conversion, 'address').properties).toEqual({
      city: { type: 'string' },
      line1: { type: 'string' },
    });
    expect(conversion.arguments.find((b) => b.property === 'address')).toMatchObject({
      in: 'body',
      style: 'deepObject',
      explode: true,
    });
  });

  it('when a multipart body has a file part, the file is asked for as base64 text and bound as a file', () => {
    const conversion = convert(
      oneOperation('post', '/upload', {
        requestBody: {
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                required: ['file'],
                properties: { file: { type: 'string', format: 'binary' }, caption: { type: 'string' } },
              },
              encoding: { file: { contentType: 'image/png' } },
            },
          },
        },
      }),
    );
    expect(prop(conversion, 'file')).toEqual({
      type: 'string',
      description: 'Binary content, base64-encoded (a data: URL is also accepted).',
      contentEncoding: 'base64',
      contentMediaType: 'application/octet-stream',
    });
    expect(conversion.arguments.find((b) => b.property === 'file')).toMatchObject({
      file: true,
      contentType: 'image/png',
    });
    expect(codes(conversion)).toContain(NoteCode.BINARY_AS_BASE64);
  });

  it('when JSON, XML and form are offered, JSON is chosen and the choice is noted', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const conversion = convert(
      oneOperation('post', '/x', {
        requestBody: {
          content: {
            'application/xml': { schema },
            'application/x-www-form-urlencoded': { schema },
            'application/vnd.api+json': { schema },
          },
        },
      }),
    );
    expect(conversion.body?.contentType).toBe('application/vnd.api+json');
    expect(conversion.notes.find((n) => n.code === NoteCode.CONTENT_TYPE_CHOSEN)?.message).toBe(
      'the body is sent as application/vnd.api+json (also offered: application/xml, application/x-www-form-urlencoded)',
    );
  });

  it('when a body is an array, a string or binary, it is one "body" argument (request_body if "body" is taken)', () => {
    const array = convert(
      oneOperation('post', '/x', { requestBody: jsonBody({ type: 'array', items: { type: 'integer' } }) }),
    );
    expect(array.parameters).toEqual({
      type: 'object',
      properties: { body: { type: 'array', items: { type: 'integer' } } },
      required: ['body'],
    });
    const text = convert(
      oneOperation('post', '/x', {
        requestBody: { content: { 'text/plain': { schema: { type: 'string' } } } },
      }),
    );
    expect(prop(text, 'body')).toEqual({ type: 'string', description: 'Request body as text/plain text.' });
    const binary = convert(
      oneOperation('post', '/x', {
        parameters: [{ name: 'body', in: 'query', schema: { type: 'string' } }],
        requestBody: { content: { 'application/octet-stream': {} } },
      }),
    );
    expect(Object.keys(binary.parameters.properties)).toEqual(['body', 'request_body']);
    expect(binary.body).toMatchObject({ kind: 'binary', whole: true });
  });
});

describe('documents', () => {
  it('when path items and operations are $refs (DigitalOcean style), every operation is still found', () => {
    const document = openApi(
      { '/a': { $ref: '#/components/pathItems/A' }, '/b': { get: { $ref: '#/components/x-ops/getB' } } },
      {
        pathItems: { A: { get: { operationId: 'getA' } } },
        'x-ops': {
          getB: { operationId: 'getB', parameters: [{ name: 'q', in: 'query', schema: { type: 'string' } }] },
        },
      },
    );
    const { operations, failures } = convertDocument(document);
    expect(failures).toEqual([]);
    expect(operations.map((o) => [o.name, o.method, o.path])).toEqual([
      ['getA', 'GET', '/a'],
      ['getB', 'GET', '/b'],
    ]);
  });

  it('when one operation is converted alone, it is identical to its conversion within the whole document', () => {
    const document = openApi(
      {
        '/a': { post: { operationId: 'a', requestBody: jsonBody({ $ref: '#/components/schemas/Tree' }) } },
        '/op': {
          post: { operationId: 'op', requestBody: jsonBody({ $ref: '#/components/schemas/Forest' }) },
        },
      },
      {
        schemas: {
          Tree: {
            type: 'object',
            properties: {
              forest: { $ref: '#/components/schemas/Forest' },
              kids: { type: 'array', items: { $ref: '#/components/schemas/Tree' } },
            },
          },
          Forest: {
            type: 'object',
            properties: { trees: { type: 'array', items: { $ref: '#/components/schemas/Tree' } } },
          },
        },
      },
    );
    const alone = convert(document);
    const within = convertDocument(document).operations.find((o) => o.name === 'op');
    expect(within).toEqual(alone);
  });
});

describe('malformed input', () => {
  it('when a document is broken in many small ways, every operation still converts to valid JSON Schema, with notes', () => {
    const selfContaining: Record<string, unknown> = { description: 'cyclic object graph (YAML alias)' };
    selfContaining.allOf = [selfContaining];
    const document = openApi({
      '/a': {
        get: {
          operationId: 'a',
          parameters: [
            null,
            1,
            { name: 'x' },
            { in: 'query' },
            { name: 'q', in: 'query', schema: 'string' },
            { $ref: '#/nowhere' },
          ],
        },
        post: {
          operationId: 'b',
          requestBody: {
            content: {
              'application/json': {
                schema: { type: 42, properties: [], enum: 'x', allOf: 'y', required: true },
              },
            },
          },
        },
        put: { operationId: 'c', requestBody: { content: { 'application/json': null } } },
        patch: {
          operationId: 'd',
          requestBody: jsonBody({
            type: 'object',
            properties: { loop: selfContaining, p: { type: 'string', pattern: '(' } },
          }),
        },
        delete: 'not an operation',
      },
      '/b': 'not a path item',
    });
    const { operations, failures, notes } = convertDocument(document);
    for (const operation of operations)
      expect(schemaProblems(operation.name, operation.parameters)).toEqual([]);
    expect(operations.map((o) => o.name)).toEqual(['a', 'c', 'b', 'd']); // methods in OpenAPI's order
    expect(failures).toEqual([
      {
        method: 'DELETE',
        path: '/a',
        operationId: undefined,
        reason: 'SCHEMA_CONVERSION_ERROR',
        message: 'DELETE /a is not an object',
      },
    ]);
    expect(notes.map((n) => n.message)).toEqual(['path item /b could not be read']);
    expect(operations[0]?.parameters.properties).toEqual({ q: {} });
    expect(operations[3]?.notes.map((n) => n.code)).toEqual(
      expect.arrayContaining([NoteCode.DEPTH_LIMIT, NoteCode.INVALID_INPUT]),
    );
  });

  it('when the input is not a document at all, a coded error says so; an unknown operation is NOT_FOUND', () => {
    expect(() => convertDocument('nope')).toThrow(
      expect.objectContaining({ code: 'SCHEMA_CONVERSION_ERROR' }),
    );
    expect(() => convertDocument({ hello: 'world' })).toThrow('not an OpenAPI document');
    expect(() => convertOperation(openApi({}), { operationId: 'missing' })).toThrow(
      expect.objectContaining({ code: 'NOT_FOUND' }),
    );
  });
});
