// The reverse direction: a model's arguments (plus seed 004 fixed_params) → HTTP request parts.

import { describe, expect, it } from 'vitest';
import { convertApiSpec, convertOperation } from './document-converter.js';
import { InvalidArgumentsError } from './errors.js';
import { mapParametersBySchema } from './fixed-params.js';
import { buildRequestParts, decodeBinary } from './request-builder.js';
import { jsonBody, oneOperation } from './__fixtures__/documents.js';

const parameter = (name: string, location: string, schema: unknown, extra: Record<string, unknown> = {}) => ({
  name,
  in: location,
  schema,
  ...(location === 'path' ? { required: true } : {}),
  ...extra,
});

describe('buildRequestParts', () => {
  it('when a path parameter is given, its {placeholder} is filled URL-encoded (label/matrix styles too)', () => {
    const conversion = convertOperation(
      oneOperation('get', '/files/{path}/{ver}{matrix}', {
        parameters: [
          parameter('path', 'path', { type: 'string' }),
          parameter('ver', 'path', { type: 'array', items: { type: 'integer' } }, { style: 'label' }),
          parameter('matrix', 'path', { type: 'string' }, { style: 'matrix' }),
        ],
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, { path: 'a b/ü?', ver: [1, 2], matrix: 'x' });
    expect(parts.path).toBe('/files/a%20b%2F%C3%BC%3F/.1,2;matrix=x');
    expect(parts.method).toBe('GET');
  });

  it('when a path parameter is missing, a coded INVALID_REQUEST error names it', () => {
    const conversion = convertOperation(
      oneOperation('get', '/items/{id}', { parameters: [parameter('id', 'path', { type: 'string' })] }),
      {
        operationId: 'op',
      },
    );
    expect(() => buildRequestParts(conversion, {})).toThrow('missing path parameter(s): id');
    expect(() => buildRequestParts(conversion, [1])).toThrow(InvalidArgumentsError);
    try {
      buildRequestParts(conversion, {});
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_REQUEST', retryable: false, detail: { missing: ['id'] } });
    }
  });

  it.each([
    ['..', 'simple'],
    ['.', 'simple'],
    ['%2e', 'simple'],
    ['.%2E', 'simple'],
    ['%2e%2E', 'simple'],
    ['.', 'label'],
    ['', 'label'],
  ])(
    'when a path value %j (style %s) would make a dot segment, a coded INVALID_REQUEST error names it and no path is built',
    (value, style) => {
      const conversion = convertOperation(
        oneOperation('get', '/echo/{id}/profile', {
          parameters: [parameter('id', 'path', { type: 'string' }, { style })],
        }),
        { operationId: 'op' },
      );
      expect(() => buildRequestParts(conversion, { id: value })).toThrow(InvalidArgumentsError);
      expect(() => buildRequestParts(conversion, { id: value })).toThrow(
        /id would make a "\." or "\.\." path segment/,
      );
    },
  );

  it('when placeholders side by side fill one segment with "..", the request is refused naming both', () => {
    const conversion = convertOperation(
      oneOperation('get', '/a/{x}{y}/b', {
        parameters: [parameter('x', 'path', { type: 'string' }), parameter('y', 'path', { type: 'string' })],
      }),
      { operationId: 'op' },
    );
    try {
      buildRequestParts(conversion, { x: '.', y: '.' });
      expect.unreachable('a ".." segment was built');
    } catch (error) {
      expect(error).toMatchObject({ code: 'INVALID_REQUEST', detail: { dot_segment: ['x', 'y'] } });
    }
  });

  it('when path values only look like dots ("...", ".env", "a..b", matrix ";id=.."), they are kept as they are', () => {
    const conversion = convertOperation(
      oneOperation('get', '/a/{x}/{m}', {
        parameters: [
          parameter('x', 'path', { type: 'string' }),
          parameter('m', 'path', { type: 'string' }, { style: 'matrix' }),
        ],
      }),
      { operationId: 'op' },
    );
    for (const x of ['...', '.env', 'a..b']) {
      expect(buildRequestParts(conversion, { x, m: '..' }).path).toBe(`/a/${x}/;m=..`);
    }
  });

  it('when query parameters are given, each honours its style and explode', () => {
    const conversion = convertOperation(
      oneOperation('get', '/search', {
        parameters: [
          parameter('tags', 'query', { type: 'array', items: { type: 'string' } }),
          parameter('ids', 'query', { type: 'array', items: { type: 'integer' } }, { explode: false }),
          parameter(
            'words',
            'query',
            { type: 'array', items: { type: 'string' } },
            { style: 'spaceDelimited', explode: false },
          ),
          parameter('filter', 'query', { type: 'object' }, { style: 'deepObject', explode: true }),
          parameter('point', 'query', { type: 'object' }),
          parameter('next', 'query', { type: 'string' }, { allowReserved: true }),
          parameter('q', 'query', { type: 'string' }),
        ],
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, {
      tags: ['a', 'b c'],
      ids: [1, 2],
      words: ['x', 'y'],
      filter: { created: { gte: 5 }, status: ['open', 'new'] },
      point: { x: 1, y: 2 },
      next: '/page?2',
      q: 'a&b=c',
    });
    expect(parts.queryString).toBe(
      [
        'tags=a',
        'tags=b%20c',
        'ids=1,2',
        'words=x%20y',
        'filter%5Bcreated%5D%5Bgte%5D=5',
        'filter%5Bstatus%5D%5B0%5D=open',
        'filter%5Bstatus%5D%5B1%5D=new',
        'x=1',
        'y=2',
        'next=/page?2',
        'q=a%26b%3Dc',
      ].join('&'),
    );
    expect(parts.query.slice(0, 4)).toEqual([
      ['tags', 'a'],
      ['tags', 'b c'],
      ['ids', '1,2'],
      ['words', 'x y'],
    ]);
  });

  it('when header and cookie parameters are given, they are serialised into header and cookie maps', () => {
    const conversion = convertOperation(
      oneOperation('get', '/x', {
        parameters: [
          parameter('X-Ids', 'header', { type: 'array', items: { type: 'integer' } }),
          parameter('X-Flag', 'header', { type: 'boolean' }),
          parameter('session', 'cookie', { type: 'string' }),
        ],
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, { 'X-Ids': [1, 2], 'X-Flag': true, session: 'abc' });
    expect(parts.header).toEqual({ 'X-Ids': '1,2', 'X-Flag': 'true' });
    expect(parts.cookie).toEqual({ session: 'abc' });
    expect(parts.body).toBeUndefined();
    expect(parts.contentType).toBeUndefined();
  });

  it('when a JSON body property was renamed for a collision, it goes back under its own name', () => {
    const conversion = convertOperation(
      oneOperation('put', '/users/{id}', {
        parameters: [parameter('id', 'path', { type: 'string' })],
        requestBody: jsonBody({
          type: 'object',
          properties: { id: { type: 'string' }, name: { type: 'string' } },
        }),
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, { id: 'u1', body_id: 'new-id', name: 'Ann', stray: 1 });
    expect(parts.path).toBe('/users/u1');
    expect(parts.body).toEqual({
      kind: 'json',
      value: { id: 'new-id', name: 'Ann' },
      text: '{"id":"new-id","name":"Ann"}',
    });
    expect(parts.contentType).toBe('application/json');
    expect(parts.ignored).toEqual(['stray']);
  });

  it('when a form body has nested objects and arrays, it is encoded in bracket notation', () => {
    const conversion = convertOperation(
      oneOperation('post', '/v1/customers', {
        requestBody: {
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: {
                  email: { type: 'string' },
                  address: { type: 'object' },
                  expand: { type: 'array', items: { type: 'string' } },
                  items: { type: 'array', items: { type: 'object' } },
                },
              },
            },
          },
        },
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, {
      email: 'a+b@example.com',
      address: { city: 'Paris', geo: { lat: 1.5 } },
      expand: ['customer', 'invoice'],
      items: [{ price: 'p_1', quantity: 2 }],
    });
    expect(parts.contentType).toBe('application/x-www-form-urlencoded');
    expect(parts.body).toEqual({
      kind: 'form',
      fields: [
        ['email', 'a+b@example.com'],
        ['address[city]', 'Paris'],
        ['address[geo][lat]', '1.5'],
        ['expand', 'customer'],
        ['expand', 'invoice'],
        ['items[0][price]', 'p_1'],
        ['items[0][quantity]', '2'],
      ],
      text: 'email=a%2Bb%40example.com&address%5Bcity%5D=Paris&address%5Bgeo%5D%5Blat%5D=1.5&expand=customer&expand=invoice&items%5B0%5D%5Bprice%5D=p_1&items%5B0%5D%5Bquantity%5D=2',
    });
  });

  it('when a multipart body has a file part, the base64 (or data: URL) argument becomes bytes with a media type', () => {
    const conversion = convertOperation(
      oneOperation('post', '/upload', {
        requestBody: {
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                properties: {
                  file: { type: 'string', format: 'binary' },
                  meta: { type: 'object' },
                  caption: { type: 'string' },
                },
              },
              encoding: { file: { contentType: 'image/png' } },
            },
          },
        },
      }),
      { operationId: 'op' },
    );
    const parts = buildRequestParts(conversion, { file: 'aGVsbG8=', meta: { a: 1 }, caption: 'hi' });
    expect(parts.contentType).toBe('multipart/form-data');
    expect(parts.body).toEqual({
      kind: 'multipart',
      parts: [
        {
          name: 'file',
          value: new TextEncoder().encode('hello'),
          filename: 'file',
          contentType: 'image/png',
        },
        { name: 'meta', value: '{"a":1}', contentType: 'application/json' },
        { name: 'caption', value: 'hi' },
      ],
    });
    const fromDataUrl = buildRequestParts(conversion, { file: 'data:text/plain;base64,aGk=' });
    expect(fromDataUrl.body).toEqual({
      kind: 'multipart',
      parts: [
        { name: 'file', value: new TextEncoder().encode('hi'), filename: 'file', contentType: 'text/plain' },
      ],
    });
  });

  it('when the body is one argument (array, text, binary), it is sent as that value', () => {
    const array = convertOperation(
      oneOperation('post', '/x', { requestBody: jsonBody({ type: 'array', items: { type: 'integer' } }) }),
      {
        operationId: 'op',
      },
    );
    expect(buildRequestParts(array, { body: [1, 2] }).body).toEqual({
      kind: 'json',
      value: [1, 2],
      text: '[1,2]',
    });
    const binary = convertOperation(
      oneOperation('post', '/x', { requestBody: { content: { 'application/octet-stream': {} } } }),
      {
        operationId: 'op',
      },
    );
    const parts = buildRequestParts(binary, { body: 'AAEC' });
    expect(parts.body).toEqual({ kind: 'binary', bytes: new Uint8Array([0, 1, 2]) });
    expect(parts.contentType).toBe('application/octet-stream');
  });

  it('when seed 004 fixed_params are given, they fill the request and the model’s arguments win', () => {
    const apiSpec = {
      parameters: [
        { name: 'kn_id', in: 'path', required: true, schema: { type: 'string' } },
        { name: 'x-account-id', in: 'header', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer' } },
      ],
      request_body: {
        content: {
          'application/json': { schema: { type: 'object', properties: { condition: { type: 'object' } } } },
        },
      },
      path: '/knowledge-networks/{kn_id}/objects',
      method: 'post',
    };
    const conversion = convertApiSpec(apiSpec);
    const fixedParams = mapParametersBySchema(
      { 'x-account-id': 'test', 'X-HTTP-Method-Override': 'GET', kn_id: 'kn_fixed', limit: 10, tenant: 't1' },
      apiSpec,
    );
    const parts = buildRequestParts(
      conversion,
      { kn_id: 'kn_model', condition: { op: 'and' } },
      { fixedParams },
    );
    expect(parts.path).toBe('/knowledge-networks/kn_model/objects');
    expect(parts.header).toEqual({ 'x-account-id': 'test' });
    expect(parts.queryString).toBe('limit=10');
    // Undeclared fixed parameters default to body (seed 004 §4.3), beside the model's body arguments.
    expect(parts.body).toEqual({
      kind: 'json',
      value: { condition: { op: 'and' }, 'X-HTTP-Method-Override': 'GET', tenant: 't1' },
      text: '{"condition":{"op":"and"},"X-HTTP-Method-Override":"GET","tenant":"t1"}',
    });
  });

  it('when parameters are declared with JSON content, the value is sent as JSON text', () => {
    const conversion = convertOperation(
      oneOperation('get', '/x', {
        parameters: [
          { name: 'filter', in: 'query', content: { 'application/json': { schema: { type: 'object' } } } },
        ],
      }),
      { operationId: 'op' },
    );
    expect(buildRequestParts(conversion, { filter: { a: 1 } }).query).toEqual([['filter', '{"a":1}']]);
  });
});

describe('decodeBinary', () => {
  it('when text is neither base64 nor a data: URL, its UTF-8 bytes are used', () => {
    expect(decodeBinary('plain text!')).toEqual({
      bytes: new TextEncoder().encode('plain text!'),
      mediaType: undefined,
    });
    expect(decodeBinary('data:,a%20b')).toEqual({
      bytes: new TextEncoder().encode('a b'),
      mediaType: undefined,
    });
  });
});
