// Where the model's arguments end up in the request: path templates, query, body, headers, cookies.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';

describe('HttpToolRunner argument placement', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;
  const ctx = { vault: {} };

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        { method: '*', path: '/v1/items/:item_id', reply: { body: { ok: true } } },
        { method: '*', path: '/v1/items', reply: { body: { ok: true } } },
        { method: '*', path: '/v1/orgs/:org/members', reply: { body: { ok: true } } },
      ],
    });
    runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  it('when a path argument holds a space and a slash, it is percent-encoded into one path segment', async () => {
    const tool = httpTool({ method: 'GET', url: `${api.url}/v1/items/{item_id}` });

    const outcome = await runner.run(tool, { item_id: 'a b/c', verbose: true }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/v1/items/a%20b%2Fc');
    expect(request?.params).toEqual({ item_id: 'a b/c' });
    expect(request?.query).toEqual({ verbose: 'true' });
  });

  it('when the model leaves out a path argument, it gets INVALID_REQUEST naming it and nothing is sent', async () => {
    const tool = httpTool({ method: 'GET', url: `${api.url}/v1/items/{item_id}` });

    const outcome = await runner.run(tool, { verbose: true }, ctx);

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(outcome.error.message).toContain('item_id');
    expect(api.requests).toHaveLength(0);
  });

  it('when a GET tool names no placement, the arguments go to the query and there is no body', async () => {
    const tool = httpTool({ method: 'GET', url: `${api.url}/v1/items` });

    await runner.run(tool, { q: 'red shoes', page: 2, tags: ['a', 'b'], skip: null }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.query).toEqual({ q: 'red shoes', page: '2', tags: ['a', 'b'] });
    expect(request?.bodyText).toBe('');
  });

  it('when a POST tool names no placement, the arguments go to a JSON body', async () => {
    const tool = httpTool({ method: 'POST', url: `${api.url}/v1/items` });

    await runner.run(tool, { name: 'lamp', price: 12.5, meta: { color: 'red' } }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.headers['content-type']).toBe('application/json');
    expect(request?.body).toEqual({ name: 'lamp', price: 12.5, meta: { color: 'red' } });
    expect(request?.query).toEqual({});
  });

  it('when a POST tool places its arguments in the query, no body is sent', async () => {
    const tool = httpTool({ method: 'POST', url: `${api.url}/v1/items`, param_placement: 'query' });

    await runner.run(tool, { name: 'lamp' }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.query).toEqual({ name: 'lamp' });
    expect(request?.bodyText).toBe('');
  });

  it('when a DELETE tool places its arguments in the body, they go to the query instead (no body on DELETE)', async () => {
    const tool = httpTool({ method: 'DELETE', url: `${api.url}/v1/items`, param_placement: 'body' });

    await runner.run(tool, { id: 7 }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.method).toBe('DELETE');
    expect(request?.query).toEqual({ id: '7' });
    expect(request?.bodyText).toBe('');
  });

  it('when a tool uses path placement, the placeholders are filled and the other arguments follow the method', async () => {
    const tool = httpTool({ method: 'PUT', url: `${api.url}/v1/items/{item_id}`, param_placement: 'path' });

    await runner.run(tool, { item_id: 42, name: 'desk' }, ctx);

    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/v1/items/42');
    expect(request?.body).toEqual({ name: 'desk' });
  });

  it('when argument_locations mixes path, header, query, cookie and body, each argument lands where it says', async () => {
    const tool = httpTool({
      method: 'POST',
      url: `${api.url}/v1/orgs/{org}/members`,
      param_placement: 'query',
      argument_locations: {
        org: 'path',
        'X-Request-Id': 'header',
        verbose: 'query',
        session: 'cookie',
        name: 'body',
        role: 'body',
      },
    });

    const outcome = await runner.run(
      tool,
      {
        org: 'acme inc',
        'X-Request-Id': 'req-1',
        verbose: false,
        session: 's=1',
        name: 'Ada',
        role: 'admin',
        extra: 'x',
      },
      ctx,
    );

    expect(outcome.ok).toBe(true);
    const [request] = await api.waitForRequests(1);
    expect(request?.path).toBe('/v1/orgs/acme%20inc/members');
    expect(request?.headers['x-request-id']).toBe('req-1');
    expect(request?.headers.cookie).toBe('session=s%3D1');
    // `extra` has no location of its own: it follows param_placement.
    expect(request?.query).toEqual({ verbose: 'false', extra: 'x' });
    expect(request?.body).toEqual({ name: 'Ada', role: 'admin' });
  });

  it('when a tool sends a form body, nested objects read a[b]=c and arrays repeat the key', async () => {
    const tool = httpTool({
      method: 'POST',
      url: `${api.url}/v1/items`,
      content_type: 'application/x-www-form-urlencoded',
    });

    await runner.run(
      tool,
      { name: 'lamp & co', address: { city: 'Köln', zip: 50667 }, tags: ['a', 'b'] },
      ctx,
    );

    const [request] = await api.waitForRequests(1);
    expect(request?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(request?.body).toEqual({
      name: 'lamp & co',
      'address[city]': 'Köln',
      'address[zip]': '50667',
      tags: ['a', 'b'],
    });
  });

  it('when a header argument carries a line break, the model gets INVALID_REQUEST and nothing is sent', async () => {
    const tool = httpTool({
      method: 'GET',
      url: `${api.url}/v1/items`,
      argument_locations: { 'X-Note': 'header' },
    });

    const outcome = await runner.run(tool, { 'X-Note': 'hi\r\nX-Injected: 1' }, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    expect(api.requests).toHaveLength(0);
  });

  it('when a tool sends a body type the runner cannot write, the call fails with TOOL_ERROR naming it', async () => {
    const tool = httpTool({
      method: 'POST',
      url: `${api.url}/v1/items`,
      content_type: 'application/msgpack',
    });

    const outcome = await runner.run(tool, { name: 'lamp' }, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('application/msgpack');
    expect(api.requests).toHaveLength(0);
  });
});
