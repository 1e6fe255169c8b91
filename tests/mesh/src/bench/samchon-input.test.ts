import { describe, expect, it } from 'vitest';
import { asSingleFileDocument } from './samchon-input.js';

describe('the bundled document as samchon reads it', () => {
  it('when refs point into bundled files, a bundled parameter or response is put in place of its ref, a bundled schema (recursive too) becomes a components schema, and local refs stay', () => {
    const document = {
      openapi: '3.0.0',
      components: { schemas: { Local: { type: 'string' } } },
      paths: {
        '/droplets': {
          get: {
            parameters: [{ $ref: '#/x-agentmesh-external/params.yml/per_page' }],
            responses: { '200': { $ref: '#/x-agentmesh-external/responses.yml/list' } },
          },
        },
      },
      'x-agentmesh-external': {
        'params.yml': { per_page: { name: 'per_page', in: 'query', schema: { type: 'integer' } } },
        'responses.yml': {
          list: {
            description: 'ok',
            content: {
              'application/json': { schema: { $ref: '#/x-agentmesh-external/models~1node.yml' } },
            },
          },
        },
        'models/node.yml': {
          type: 'object',
          properties: {
            name: { $ref: '#/components/schemas/Local' },
            children: { type: 'array', items: { $ref: '#/x-agentmesh-external/models~1node.yml' } },
          },
        },
      },
    };
    const inlined = asSingleFileDocument(document) as typeof document & {
      components: { schemas: Record<string, unknown> };
    };
    expect(inlined).not.toHaveProperty('x-agentmesh-external');
    const get = inlined.paths['/droplets'].get;
    expect(get.parameters[0]).toEqual({ name: 'per_page', in: 'query', schema: { type: 'integer' } });
    const response = get.responses['200'] as unknown as {
      content: { 'application/json': { schema: unknown } };
    };
    expect(response.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/models_1node_yml',
    });
    expect(inlined.components.schemas['models_1node_yml']).toEqual({
      type: 'object',
      properties: {
        name: { $ref: '#/components/schemas/Local' },
        children: { type: 'array', items: { $ref: '#/components/schemas/models_1node_yml' } },
      },
    });
    expect(inlined.components.schemas['Local']).toEqual({ type: 'string' });
    expect(JSON.stringify(inlined)).not.toContain('x-agentmesh-external');
  });

  it('when the document bundles nothing, it is given as it is', () => {
    const document = { openapi: '3.0.0', paths: {} };
    expect(asSingleFileDocument(document)).toBe(document);
  });
});
