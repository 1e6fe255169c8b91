// HTTP tools imported from OpenAPI: the stored `request_template` puts each argument where the document
// says, and the request goes through the same guard, auth and error handling as seed 000 tools.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import type { HttpTool } from '@agentmesh/protocol';
import { importedTool, petstoreDocument } from '../__fixtures__/openapi-tools.js';
import { HttpToolRunner } from '../http/http-tool-runner.js';

/** A small document for what the pet store lacks: form and multipart bodies, `explode: false`, cookies. */
const shopDocument = {
  openapi: '3.0.3',
  info: { title: 'shop', version: '1' },
  paths: {
    '/orders': {
      get: {
        operationId: 'listOrders',
        parameters: [
          {
            name: 'status',
            in: 'query',
            explode: false,
            schema: { type: 'array', items: { type: 'string' } },
          },
          { name: 'X-Tenant', in: 'header', required: true, schema: { type: 'string' } },
          { name: 'session', in: 'cookie', schema: { type: 'string' } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/oauth/token': {
      post: {
        operationId: 'issueToken',
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: {
                type: 'object',
                properties: {
                  grant_type: { type: 'string' },
                  scope: { type: 'array', items: { type: 'string' } },
                  client: { type: 'object', properties: { id: { type: 'string' } } },
                },
                required: ['grant_type'],
              },
            },
          },
        },
        responses: { '200': { description: 'ok' } },
      },
    },
    // Real documents' ways to make path keys unique: a fragment (Box) and a fixed query (OpenAI).
    '/boxes/{box_id}#get_shared_link': {
      get: {
        operationId: 'getSharedLink',
        parameters: [
          { name: 'box_id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'fields', in: 'query', required: true, schema: { type: 'string' } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/responses/{id}/input_items?beta=true': {
      get: {
        operationId: 'listInputItems',
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          { name: 'limit', in: 'query', schema: { type: 'integer' } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/files/{folder}': {
      post: {
        operationId: 'uploadFile',
        parameters: [{ name: 'folder', in: 'path', required: true, schema: { type: 'string' } }],
        requestBody: {
          content: {
            'multipart/form-data': {
              schema: {
                type: 'object',
                properties: {
                  title: { type: 'string' },
                  file: { type: 'string', format: 'binary' },
                },
              },
              encoding: { file: { contentType: 'text/plain' } },
            },
          },
        },
        responses: { '200': { description: 'ok' } },
      },
    },
  },
};

describe('HttpToolRunner with OpenAPI-imported tools', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;
  let petstore: unknown;
  const ctx = { vault: {} };

  beforeAll(async () => {
    const paths = [
      '/api/v3/user/:username',
      '/api/v3/pet/findByTags',
      '/api/v3/pet/:petId',
      '/shop/orders',
      '/shop/oauth/token',
      '/shop/files/:folder',
      '/shop/boxes/:boxId',
      '/shop/responses/:id/input_items',
    ];
    api = await startRecordingApi({
      routes: paths.map((path) => ({ method: '*', path, reply: { body: { ok: true } } })),
    });
    runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
    petstore = await petstoreDocument();
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  const petstoreTool = (method: string, path: string): HttpTool =>
    importedTool(petstore, { method, path }, `${api.url}/api/v3`);
  const shopTool = (operationId: string): HttpTool =>
    importedTool(shopDocument, { operationId }, `${api.url}/shop/`);

  it('when PUT /user/{username} is called, the path is filled and the renamed body username is sent under its own name', async () => {
    const tool = petstoreTool('put', '/user/{username}');

    const outcome = await runner.run(
      tool,
      { username: 'ada lovelace', body_username: 'ada_l', firstName: 'Ada', userStatus: 1 },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('PUT');
    expect(request?.path).toBe('/api/v3/user/ada%20lovelace');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toEqual({ username: 'ada_l', firstName: 'Ada', userStatus: 1 });
  });

  it('when a path key carries #fragment, the request goes to the bare path with its query arguments', async () => {
    const outcome = await runner.run(shopTool('getSharedLink'), { box_id: '42', fields: 'shared_link' }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/shop/boxes/42');
    expect(request?.query).toEqual({ fields: 'shared_link' });
  });

  it('when a path key carries ?beta=true, the request carries beta=true beside the query arguments', async () => {
    const outcome = await runner.run(shopTool('listInputItems'), { id: 'resp_1', limit: 5 }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/shop/responses/resp_1/input_items');
    expect(request?.query).toEqual({ beta: 'true', limit: '5' });
  });

  it('when a query array is declared with explode, each item is its own query parameter', async () => {
    const tool = petstoreTool('get', '/pet/findByTags');

    const outcome = await runner.run(tool, { tags: ['red', 'small dog'] }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });

    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('GET');
    expect(request?.path).toBe('/api/v3/pet/findByTags');
    expect(request?.query).toEqual({ tags: ['red', 'small dog'] });
    expect(request?.bodyText).toBe('');
  });

  it('when a query array is declared without explode and a header and cookie are declared, each arrives in its place', async () => {
    const tool = shopTool('listOrders');

    const outcome = await runner.run(
      tool,
      { status: ['open', 'paid'], 'X-Tenant': 'acme', session: 's 1' },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { ok: true } });

    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/shop/orders');
    expect(request?.query).toEqual({ status: 'open,paid' });
    expect(request?.headers['x-tenant']).toBe('acme');
    expect(request?.headers.cookie).toBe('session=s%201');
  });

  it('when DELETE /pet/{petId} declares an api_key header, the header arrives and the path is filled', async () => {
    const tool = petstoreTool('delete', '/pet/{petId}');

    const outcome = await runner.run(tool, { petId: 42, api_key: 'k-1' }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });

    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('DELETE');
    expect(request?.path).toBe('/api/v3/pet/42');
    expect(request?.headers.api_key).toBe('k-1');
  });

  it('when the operation takes a form body, the fields arrive urlencoded with nested objects in brackets', async () => {
    const tool = shopTool('issueToken');

    const outcome = await runner.run(
      tool,
      { grant_type: 'client_credentials', scope: ['a', 'b'], client: { id: 'c1' } },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { ok: true } });

    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('POST');
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.body).toEqual({
      grant_type: 'client_credentials',
      scope: ['a', 'b'],
      'client[id]': 'c1',
    });
  });

  it('when the operation takes a multipart body, text fields and the file part arrive as form data', async () => {
    const tool = shopTool('uploadFile');
    const content = 'hello, file';

    const outcome = await runner.run(
      tool,
      { folder: 'docs', title: 'notes', file: Buffer.from(content).toString('base64') },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/shop/files/docs');
    const contentType = String(request?.headers['content-type']);
    expect(contentType).toMatch(/^multipart\/form-data; boundary=/);
    const form = await new Response(request?.bodyText, {
      headers: { 'content-type': contentType },
    }).formData();
    expect(form.get('title')).toBe('notes');
    const file = form.get('file');
    expect(file).toBeInstanceOf(Blob);
    expect(await (file as Blob).text()).toBe(content);
    expect((file as Blob).type).toBe('text/plain');
  });

  it('when the model leaves out a path argument, it gets INVALID_REQUEST naming it and nothing is sent', async () => {
    const tool = petstoreTool('put', '/user/{username}');

    const outcome = await runner.run(tool, { firstName: 'Ada' }, ctx);

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(outcome.error.message).toContain('username');
    expect(api.requests).toHaveLength(0);
  });

  it('when the tool has bearer auth, the token is added and scrubbed from an echoing error', async () => {
    api.route({
      method: 'GET',
      path: '/api/v3/pet/findByTags',
      reply: (request) => ({ status: 500, body: { echoed: request.headers.authorization } }),
    });
    const tool = {
      ...petstoreTool('get', '/pet/findByTags'),
      auth: { type: 'bearer', token_source: 'PET_TOKEN' },
    } as const;

    const outcome = await runner.run(tool, { tags: ['x'] }, { vault: { PET_TOKEN: 'canary-token-4711' } });

    const [request] = await api.waitForRequests(1);
    expect(request?.headers.authorization).toBe('Bearer canary-token-4711');
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('TOOL_ERROR');
    expect(outcome.error.detail).toMatchObject({ status: 500 });
    expect(outcome.error.message).toContain('[REDACTED]');
    expect(JSON.stringify(outcome.error)).not.toContain('canary-token-4711');
  });

  it('when the server is loopback and not allow-listed, the outbound guard refuses it and nothing is sent', async () => {
    const guarded = new HttpToolRunner({ guard: {} });
    try {
      const outcome = await guarded.run(petstoreTool('get', '/pet/findByTags'), { tags: ['x'] }, ctx);

      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe('FORBIDDEN');
      expect(api.requests).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });
});
