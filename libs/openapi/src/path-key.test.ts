// Path keys that carry a fragment or a fixed query (real documents' ways to make keys unique) build requests
// to the bare path, with every declared parameter, and with the fixed query merged into the operation's own.

import { describe, expect, it } from 'vitest';
import { convertDocument } from './document-converter.js';
import { splitPathKey } from './path-key.js';
import { buildRequestParts } from './request-builder.js';
import { openApi } from './__fixtures__/documents.js';

const fields = {
  name: 'fields',
  in: 'query',
  schema: { type: 'array', items: { type: 'string' } },
  explode: false,
};
const fileId = { name: 'file_id', in: 'path', required: true, schema: { type: 'string' } };

// Box-style: one path, several operations told apart by a fragment; OpenAI-style: a key pinning `?beta=true`.
const document = openApi({
  '/files/{file_id}': { get: { operationId: 'get_file', parameters: [fileId, fields] } },
  '/files/{file_id}#get_shared_link': {
    get: { operationId: 'get_shared_link', parameters: [fileId, { ...fields, required: true }] },
  },
  '/files/{file_id}#add_shared_link': {
    put: {
      operationId: 'add_shared_link',
      parameters: [fileId, { ...fields, required: true }],
      requestBody: {
        content: {
          'application/json': { schema: { type: 'object', properties: { shared_link: { type: 'object' } } } },
        },
      },
    },
  },
  '/responses/{id}/input_items?beta=true': {
    get: {
      operationId: 'list_input_items',
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer' } },
      ],
    },
  },
  '/search?mode=fast&beta=true': {
    get: { operationId: 'search', parameters: [{ name: 'mode', in: 'query', schema: { type: 'string' } }] },
  },
});

/** The URL a caller builds from the parts, as the executor does: base + path + `?` + queryString. */
function urlOf(parts: { path: string; queryString: string }): URL {
  return new URL(`https://api.example.test${parts.path}${parts.queryString ? `?${parts.queryString}` : ''}`);
}

describe('path keys with a fragment or a fixed query', () => {
  const conversion = convertDocument(document);
  const operation = (id: string) => conversion.operations.find((o) => o.operationId === id)!;

  it('when keys differ only by a #fragment, every operation keeps every declared parameter as an argument', () => {
    expect(conversion.failures).toEqual([]);
    for (const id of ['get_file', 'get_shared_link', 'add_shared_link']) {
      expect(Object.keys(operation(id).parameters.properties), id).toEqual(
        expect.arrayContaining(['file_id', 'fields']),
      );
    }
    expect(operation('get_shared_link').parameters.required).toEqual(['file_id', 'fields']);
  });

  it('when a #fragment key is called, the request goes to the bare path and the query arguments reach the server', () => {
    const parts = buildRequestParts(operation('get_shared_link'), {
      file_id: '12 3',
      fields: ['shared_link', 'name'],
    });
    expect(parts.path).toBe('/files/12%203');
    expect(parts.query).toEqual([['fields', 'shared_link,name']]);
    const url = urlOf(parts);
    expect(url.hash).toBe('');
    expect(url.pathname).toBe('/files/12%203');
    expect(url.searchParams.get('fields')).toBe('shared_link,name');

    const put = buildRequestParts(operation('add_shared_link'), {
      file_id: '9',
      fields: ['shared_link'],
      shared_link: { access: 'open' },
    });
    expect(urlOf(put).href).toBe('https://api.example.test/files/9?fields=shared_link');
    expect(put.body).toMatchObject({ kind: 'json', value: { shared_link: { access: 'open' } } });
  });

  it('when a key fixes ?beta=true, the request carries beta=true beside the operation’s own query arguments', () => {
    const parts = buildRequestParts(operation('list_input_items'), { id: 'resp_1', limit: 5 });
    expect(parts.path).toBe('/responses/resp_1/input_items');
    expect(parts.query).toEqual([
      ['beta', 'true'],
      ['limit', '5'],
    ]);
    expect(parts.queryString).toBe('beta=true&limit=5');
    expect(buildRequestParts(operation('list_input_items'), { id: 'r' }).queryString).toBe('beta=true');
  });

  it('when an argument has the name of a fixed query parameter, the argument replaces it (no duplicate)', () => {
    const parts = buildRequestParts(operation('search'), { mode: 'deep' });
    expect(parts.query).toEqual([
      ['beta', 'true'],
      ['mode', 'deep'],
    ]);
    expect(buildRequestParts(operation('search'), {}).query).toEqual([
      ['mode', 'fast'],
      ['beta', 'true'],
    ]);
  });

  it('when a key holds both, the fragment is dropped and the query decoded', () => {
    expect(splitPathKey('/a/{b}?x=1%202&y#frag?z=3')).toEqual({
      template: '/a/{b}',
      fixedQuery: [
        ['x', '1 2'],
        ['y', ''],
      ],
    });
    expect(splitPathKey('/plain/{id}')).toEqual({ template: '/plain/{id}', fixedQuery: [] });
  });
});
