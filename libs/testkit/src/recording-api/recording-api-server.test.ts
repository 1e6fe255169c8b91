import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from './recording-api-server.js';

describe('recording API server', () => {
  let api: RecordingApi;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        {
          method: 'GET',
          path: '/v1/users/:id',
          reply: ({ params }) => ({ body: { id: params['id'], name: 'Ada' } }),
        },
        {
          method: 'POST',
          path: '/v1/orders',
          reply: { status: 201, headers: { 'X-Order': 'o-1' }, body: { ok: true } },
        },
        { method: 'GET', path: '/health', reply: { body: 'up' } },
      ],
    });
  });

  afterAll(async () => {
    await api?.stop();
  });

  it('records method, path, multi-valued query and lowercased headers, and replies with the route params', async () => {
    const response = await fetch(`${api.url}/v1/users/a%20b?tag=x&tag=y&page=2`, {
      headers: { 'X-Trace-Id': 't-1' },
    });

    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ id: 'a b', name: 'Ada' });
    expect(api.requests.at(-1)).toMatchObject({
      method: 'GET',
      path: '/v1/users/a%20b',
      query: { tag: ['x', 'y'], page: '2' },
      params: { id: 'a b' },
      route: 'GET /v1/users/:id',
    });
    expect(api.requests.at(-1)?.headers['x-trace-id']).toBe('t-1');
  });

  it('parses a JSON body and answers with the declared status, headers and JSON', async () => {
    const response = await fetch(`${api.url}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sku: 'A-1', qty: 2 }),
    });

    expect(response.status).toBe(201);
    expect(response.headers.get('x-order')).toBe('o-1');
    expect(await response.json()).toEqual({ ok: true });
    const recorded = api.requests.at(-1);
    expect(recorded?.body).toEqual({ sku: 'A-1', qty: 2 });
    expect(recorded?.bodyText).toBe('{"sku":"A-1","qty":2}');
  });

  it('parses a form-urlencoded body', async () => {
    api.route({
      method: 'POST',
      path: '/oauth/token',
      reply: { body: { access_token: 'tok', expires_in: 60 } },
    });
    const response = await fetch(`${api.url}/oauth/token`, {
      method: 'POST',
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'a b' }),
    });

    expect(await response.json()).toEqual({ access_token: 'tok', expires_in: 60 });
    expect(api.requests.at(-1)?.body).toEqual({ grant_type: 'client_credentials', scope: 'a b' });
  });

  it('keeps invalid JSON as text and says why it did not parse', async () => {
    await fetch(`${api.url}/v1/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{oops',
    });
    const recorded = api.requests.at(-1);
    expect(recorded?.bodyText).toBe('{oops');
    expect(recorded?.body).toBeUndefined();
    expect(recorded?.bodyParseError).toBeTruthy();
  });

  it('answers a string body as text', async () => {
    const response = await fetch(`${api.url}/health`);
    expect(response.headers.get('content-type')).toContain('text/plain');
    expect(await response.text()).toBe('up');
  });

  it('when a later route matches the same request, the later one answers', async () => {
    api.route({ method: 'GET', path: '/v1/users/42', reply: { status: 410, body: { gone: true } } });
    const response = await fetch(`${api.url}/v1/users/42`);
    expect(response.status).toBe(410);
  });

  it('when nothing matches, it answers 404 JSON and still records the request', async () => {
    const before = api.requests.length;
    const response = await fetch(`${api.url}/nowhere?x=1`, { method: 'DELETE' });

    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: 'not_found' });
    expect(api.requests).toHaveLength(before + 1);
    expect(api.requests.at(-1)).toMatchObject({ method: 'DELETE', path: '/nowhere', route: undefined });
  });

  it('when a reply function throws, it answers 500 with the reason', async () => {
    api.route({
      method: 'GET',
      path: '/broken',
      reply: () => {
        throw new Error('route bug');
      },
    });
    const response = await fetch(`${api.url}/broken`);
    expect(response.status).toBe(500);
    expect(await response.json()).toMatchObject({ message: 'route bug' });
  });

  it('waitForRequests resolves once requests sent in the background have arrived', async () => {
    const before = api.requests.length;
    api.route({ method: 'POST', path: '/hooks/:name', delayMs: 20, reply: { status: 204 } });
    const sent = Promise.all(
      ['a', 'b'].map((name) => fetch(`${api.url}/hooks/${name}`, { method: 'POST', body: name })),
    );

    const requests = await api.waitForRequests(before + 2, 2_000);

    expect(
      requests
        .slice(before)
        .map((r) => r.params['name'])
        .sort(),
    ).toEqual(['a', 'b']);
    expect((await sent).map((r) => r.status)).toEqual([204, 204]);
  });

  it('waitForRequests fails at its bound when the requests never come', async () => {
    await expect(api.waitForRequests(api.requests.length + 1, 50)).rejects.toThrow(/timed out after 50 ms/);
  });
});
