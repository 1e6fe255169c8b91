// Seed 004's reference behaviour: the §4.4 conversion example and the §4.3 fixed-parameter mapping.

import { toFunctionName } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { convertApiSpec } from './document-converter.js';
import { mapParametersByNaming, mapParametersBySchema } from './fixed-params.js';
import { schemaProblems } from './__fixtures__/schema-check.js';

// Seed 004 §4.4, input and output verbatim.
const SEED_API_SPEC = {
  parameters: [
    { name: 'kn_id', in: 'path', required: true, schema: { type: 'string' } },
    { name: 'limit', in: 'query', required: false, schema: { type: 'integer' } },
  ],
  request_body: {
    content: {
      'application/json': {
        schema: { properties: { condition: { type: 'object', description: 'filter condition' } } },
      },
    },
  },
};
const SEED_OUTPUT = {
  type: 'object',
  properties: {
    kn_id: { type: 'string', description: '' },
    limit: { type: 'integer', description: '' },
    condition: { type: 'object', description: 'filter condition' },
  },
  required: ['kn_id'],
};

describe('seed 004 §4.4 conversion', () => {
  it('when the seed example api_spec is converted, it gives the seed output: same properties, types and required', () => {
    const { parameters, arguments: bindings } = convertApiSpec(SEED_API_SPEC);

    expect(parameters.type).toBe('object');
    expect(Object.keys(parameters.properties)).toEqual(Object.keys(SEED_OUTPUT.properties));
    for (const [name, expected] of Object.entries(SEED_OUTPUT.properties)) {
      expect(parameters.properties[name]?.type, name).toBe(expected.type);
      // Descriptions where the input has them (empty ones are left out, not invented).
      if (expected.description !== '')
        expect(parameters.properties[name]?.description).toBe(expected.description);
    }
    expect(parameters.required).toEqual(SEED_OUTPUT.required);
    expect(bindings.map((b) => [b.property, b.in])).toEqual([
      ['kn_id', 'path'],
      ['limit', 'query'],
      ['condition', 'body'],
    ]);
    expect(schemaProblems('seed', parameters)).toEqual([]);
  });

  it('when the body is a $ref into components (which the seed MVP skipped), its properties are resolved and flattened', () => {
    const conversion = convertApiSpec({
      ...SEED_API_SPEC,
      request_body: { content: { 'application/json': { schema: { $ref: '#/components/schemas/Query' } } } },
      components: {
        schemas: {
          Query: {
            type: 'object',
            required: ['ot_id'],
            properties: {
              ot_id: { type: 'string', description: 'object type id' },
              sort: { type: 'array', items: { $ref: '#/components/schemas/Sort' } },
            },
          },
          Sort: {
            type: 'object',
            properties: { field: { type: 'string' }, direction: { type: 'string', enum: ['asc', 'desc'] } },
          },
        },
      },
    });
    expect(conversion.parameters.required).toEqual(['kn_id', 'ot_id']);
    expect(conversion.parameters.properties.sort).toEqual({
      type: 'array',
      items: {
        type: 'object',
        properties: { field: { type: 'string' }, direction: { type: 'string', enum: ['asc', 'desc'] } },
      },
    });
  });

  it('when api_spec uses Swagger-style body parameters, the body schema is still flattened into arguments', () => {
    const conversion = convertApiSpec({
      parameters: [
        { name: 'kn_id', in: 'path', required: true, type: 'string' },
        { name: 'payload', in: 'body', required: true, schema: { $ref: '#/definitions/Payload' } },
      ],
      definitions: {
        Payload: { type: 'object', required: ['ot_id'], properties: { ot_id: { type: 'string' } } },
      },
    });
    expect(conversion.parameters).toEqual({
      type: 'object',
      properties: { kn_id: { type: 'string' }, ot_id: { type: 'string' } },
      required: ['kn_id', 'ot_id'],
    });
  });

  it('when a tool name is given (the tool detail’s name), it becomes the function name, mapped by the protocol', () => {
    expect(convertApiSpec(SEED_API_SPEC, { name: 'search object instance' }).name).toBe(
      toFunctionName('search object instance'),
    );
    expect(convertApiSpec(SEED_API_SPEC).name).toBe('operation');
  });
});

describe('seed 004 §4.3 fixed parameter mapping', () => {
  const apiSpec = {
    parameters: [
      { name: 'x-account-id', in: 'header' },
      { name: 'x-account-type', in: 'header' },
      { name: 'kn_id', in: 'path' },
      { name: 'limit', in: 'query' },
    ],
  };

  it('when parameters are declared in api_spec, each fixed parameter goes to its declared location', () => {
    const fixed = mapParametersBySchema(
      { 'x-account-id': 'test', 'x-account-type': 'user', kn_id: 'kn_medical', limit: 10 },
      apiSpec,
    );
    expect(fixed).toEqual({
      header: { 'x-account-id': 'test', 'x-account-type': 'user' },
      path: { kn_id: 'kn_medical' },
      query: { limit: 10 },
      body: {},
    });
  });

  it('when a fixed parameter names a declared header in another case, it is still a header', () => {
    expect(mapParametersBySchema({ 'X-Account-Id': 'test' }, apiSpec).header).toEqual({
      'X-Account-Id': 'test',
    });
  });

  it('when a fixed parameter is not declared, it defaults to body', () => {
    expect(mapParametersBySchema({ condition: { a: 1 } }, apiSpec).body).toEqual({ condition: { a: 1 } });
  });

  it('when a declared parameter is a $ref into components, its location is still found', () => {
    const fixed = mapParametersBySchema(
      { session: 's1' },
      {
        parameters: [{ $ref: '#/components/parameters/Session' }],
        components: { parameters: { Session: { name: 'session', in: 'cookie' } } },
      },
    );
    expect(fixed).toEqual({ header: {}, path: {}, query: {}, body: {}, cookie: { session: 's1' } });
  });

  it('when the spec cannot be parsed, names decide: x-*, Authorization and Content-Type are headers, the rest body', () => {
    const params = { 'X-Trace': 't', authorization: 'Bearer a', 'CONTENT-TYPE': 'text/plain', kn_id: 'k' };
    const expected = {
      header: { 'X-Trace': 't', authorization: 'Bearer a', 'CONTENT-TYPE': 'text/plain' },
      path: {},
      query: {},
      body: { kn_id: 'k' },
    };
    expect(mapParametersByNaming(params)).toEqual(expected);
    expect(mapParametersBySchema(params, 'not a spec')).toEqual(expected);
    expect(mapParametersBySchema(params, { parameters: 'broken' })).toEqual(expected);
  });
});
