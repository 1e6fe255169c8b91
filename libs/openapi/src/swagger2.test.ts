// Swagger 2.0 documents are converted to OpenAPI 3 first, then like any other document.

import { describe, expect, it } from 'vitest';
import { convertDocument } from './document-converter.js';
import { buildRequestParts } from './request-builder.js';
import { swagger2ToOpenApi3 } from './swagger2.js';
import { schemaProblems } from './__fixtures__/schema-check.js';

const swagger = {
  swagger: '2.0',
  info: { title: 'Pets', version: '1' },
  host: 'api.example.com',
  basePath: '/v1',
  schemes: ['https'],
  consumes: ['application/json'],
  securityDefinitions: {
    key: { type: 'apiKey', name: 'X-Key', in: 'header' },
    machine: {
      type: 'oauth2',
      flow: 'application',
      tokenUrl: 'https://auth.example.com/token',
      scopes: { 'pets:write': 'write' },
    },
  },
  parameters: { Limit: { name: 'limit', in: 'query', type: 'integer', maximum: 100 } },
  definitions: {
    Pet: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, owner: { $ref: '#/definitions/Owner' } },
    },
    Owner: { type: 'object', properties: { email: { type: 'string', 'x-nullable': true } } },
  },
  paths: {
    '/pets': {
      get: {
        operationId: 'listPets',
        parameters: [
          { $ref: '#/parameters/Limit' },
          { name: 'tags', in: 'query', type: 'array', items: { type: 'string' }, collectionFormat: 'pipes' },
        ],
      },
      post: {
        operationId: 'createPet',
        parameters: [{ name: 'pet', in: 'body', required: true, schema: { $ref: '#/definitions/Pet' } }],
      },
    },
    '/pets/{id}/photo': {
      parameters: [{ name: 'id', in: 'path', required: true, type: 'string' }],
      post: {
        operationId: 'uploadPhoto',
        consumes: ['multipart/form-data'],
        parameters: [
          { name: 'photo', in: 'formData', type: 'file', required: true },
          { name: 'caption', in: 'formData', type: 'string' },
        ],
      },
    },
  },
};

describe('Swagger 2.0 input', () => {
  it('when a Swagger 2.0 document is converted, body/formData params, definitions and collectionFormat come through', () => {
    const before = structuredClone(swagger);
    const { operations, failures, securitySchemes } = convertDocument(swagger);
    expect(swagger).toEqual(before);
    expect(failures).toEqual([]);
    for (const operation of operations)
      expect(schemaProblems(operation.name, operation.parameters)).toEqual([]);

    const [list, create, upload] = operations;
    expect(list?.parameters.properties).toEqual({
      limit: { type: 'integer', maximum: 100 },
      tags: { type: 'array', items: { type: 'string' } },
    });
    expect(list?.arguments.find((b) => b.property === 'tags')).toMatchObject({
      style: 'pipeDelimited',
      explode: false,
    });
    expect(list?.servers).toEqual(['https://api.example.com/v1']);

    expect(create?.parameters).toEqual({
      type: 'object',
      properties: {
        name: { type: 'string' },
        owner: { type: 'object', properties: { email: { type: ['string', 'null'] } } },
      },
      required: ['name'],
    });
    expect(create?.body).toEqual({
      contentType: 'application/json',
      kind: 'json',
      required: true,
      whole: false,
    });

    expect(upload?.body?.contentType).toBe('multipart/form-data');
    expect(upload?.parameters.required).toEqual(['id', 'photo']);
    expect(upload?.arguments.find((b) => b.property === 'photo')).toMatchObject({ in: 'body', file: true });

    expect(securitySchemes.map((s) => [s.name, s.authConfig?.type])).toEqual([
      ['key', 'api_key'],
      ['machine', 'oauth2'],
    ]);
  });

  it('when a converted Swagger operation is called, pipe-delimited arrays are serialised as declared', () => {
    const list = convertDocument(swagger).operations[0]!;
    expect(buildRequestParts(list, { tags: ['a', 'b'], limit: 5 }).queryString).toBe('limit=5&tags=a%7Cb');
  });

  it('when definitions are moved to components, their $refs are rewritten', () => {
    const { document } = swagger2ToOpenApi3(swagger);
    expect(document.openapi).toBe('3.0.3');
    expect(
      (document.components as { schemas: Record<string, { properties: { owner: unknown } }> }).schemas.Pet
        ?.properties.owner,
    ).toEqual({
      $ref: '#/components/schemas/Owner',
    });
  });
});
