// Credentials from the task's vault, put into requests the way each auth type says.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi, type RoutedRequest } from '@agentmesh/testkit';
import type { AuthConfig, HttpTool } from '@agentmesh/protocol';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';
import { OAuth2TokenCache } from './oauth2-token-cache.js';

const guard = { allowHosts: ['127.0.0.1'] };

describe('HttpToolRunner static auth', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [{ method: '*', path: '/v1/me', reply: { body: { me: 'ok' } } }],
    });
    runner = new HttpToolRunner({ guard });
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  const toolWith = (auth: AuthConfig): HttpTool =>
    httpTool({ method: 'GET', url: `${api.url}/v1/me` }, { auth });

  it('when api_key maps one credential to a header and one to the query, both arrive', async () => {
    const tool = toolWith({
      type: 'api_key',
      mapping: [
        { source: 'KEY', target: 'X-Api-Key', location: 'header' },
        { source: 'APP', target: 'app_id', location: 'query' },
      ],
    });

    const outcome = await runner.run(tool, { q: 'x' }, { vault: { KEY: 'key-value-1', APP: 'app-77' } });

    expect(outcome).toEqual({ ok: true, result: { me: 'ok' } });
    const [request] = await api.waitForRequests(1);
    expect(request?.headers['x-api-key']).toBe('key-value-1');
    expect(request?.query).toEqual({ q: 'x', app_id: 'app-77' });
  });

  it('when the tool uses bearer auth, the API gets Authorization: Bearer <token>', async () => {
    const tool = toolWith({ type: 'bearer', token_source: 'TOKEN' });

    await runner.run(tool, {}, { vault: { TOKEN: 'tok-abc-123' } });

    const [request] = await api.waitForRequests(1);
    expect(request?.headers.authorization).toBe('Bearer tok-abc-123');
  });

  it('when the tool uses basic auth, the API gets base64(user:pass)', async () => {
    const tool = toolWith({ type: 'basic', username_source: 'USER', password_source: 'PASS' });

    await runner.run(tool, {}, { vault: { USER: 'ada', PASS: 'pä:ss' } });

    const [request] = await api.waitForRequests(1);
    const header = String(request?.headers.authorization);
    expect(header.startsWith('Basic ')).toBe(true);
    expect(Buffer.from(header.slice(6), 'base64').toString('utf8')).toBe('ada:pä:ss');
  });

  it('when an argument header collides with an auth header, the credential wins', async () => {
    const tool = httpTool(
      { method: 'GET', url: `${api.url}/v1/me`, argument_locations: { Authorization: 'header' } },
      { auth: { type: 'bearer', token_source: 'TOKEN' } },
    );

    await runner.run(tool, { Authorization: 'Bearer forged' }, { vault: { TOKEN: 'tok-real-1' } });

    const [request] = await api.waitForRequests(1);
    expect(request?.headers.authorization).toBe('Bearer tok-real-1');
  });

  it('when a credential is missing from the vault, the call fails with CREDENTIALS_MISSING naming the key and nothing is sent', async () => {
    const tool = toolWith({
      type: 'api_key',
      mapping: [
        { source: 'QCC_KEY', target: 'Token', location: 'header' },
        { source: 'QCC_SECRET', target: 'Timespan', location: 'header' },
      ],
    });

    const outcome = await runner.run(tool, {}, { vault: { QCC_KEY: 'present-value' } });

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'CREDENTIALS_MISSING',
        message: "credential missing from the task's vault: QCC_SECRET",
        detail: { missing: ['QCC_SECRET'] },
      },
    });
    expect(JSON.stringify(outcome)).not.toContain('present-value');
    expect(api.requests).toHaveLength(0);
  });
});

describe('HttpToolRunner oauth2 client credentials', () => {
  let api: RecordingApi;
  let issued: number;
  let rejectToken: string | undefined;
  let now: number;
  let runner: HttpToolRunner;

  const tokenRequests = () => api.requests.filter((request) => request.path === '/oauth/token');
  const apiRequests = () => api.requests.filter((request) => request.path === '/v1/data');

  const oauth2Tool = (clientAuth?: 'basic' | 'body'): HttpTool =>
    httpTool(
      { method: 'GET', url: `${api.url}/v1/data` },
      {
        auth: {
          type: 'oauth2',
          oauth2: {
            token_url: `${api.url}/oauth/token`,
            client_id_source: 'CLIENT_ID',
            client_secret_source: 'CLIENT_SECRET',
            scopes: ['read', 'write'],
            audience: 'https://api.example',
            ...(clientAuth === undefined ? {} : { client_auth: clientAuth }),
          },
        },
      },
    );
  const vault = { CLIENT_ID: 'client-1', CLIENT_SECRET: 'secret-xyz-1' };

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        {
          method: 'POST',
          path: '/oauth/token',
          reply: () => {
            issued += 1;
            return { body: { access_token: `token-${issued}`, token_type: 'Bearer', expires_in: 3600 } };
          },
        },
        {
          method: 'GET',
          path: '/v1/data',
          reply: (request: RoutedRequest) =>
            request.headers.authorization === `Bearer ${rejectToken}`
              ? { status: 401, body: { error: 'invalid_token' } }
              : // Which token arrived, without echoing it (the runner would scrub a token from results).
                {
                  body: {
                    data: [1, 2, 3],
                    seen: String(request.headers.authorization).replace('Bearer token-', '#'),
                  },
                },
        },
      ],
    });
  });
  beforeEach(() => {
    api.requests.length = 0;
    issued = 0;
    rejectToken = undefined;
    now = Date.parse('2025-01-01T00:00:00Z');
    runner = new HttpToolRunner({ guard, tokenCache: new OAuth2TokenCache({ now: () => now }) });
  });
  afterEach(async () => {
    await runner.close();
  });
  afterAll(async () => {
    await api.stop();
  });

  it('when two calls run one after the other, the token is fetched once and sent as a bearer token both times', async () => {
    const first = await runner.run(oauth2Tool(), {}, { vault });
    const second = await runner.run(oauth2Tool(), {}, { vault });

    expect(first).toEqual({ ok: true, result: { data: [1, 2, 3], seen: '#1' } });
    expect(second).toEqual(first);
    expect(tokenRequests()).toHaveLength(1);
    const [tokenRequest] = tokenRequests();
    expect(tokenRequest?.body).toEqual({
      grant_type: 'client_credentials',
      scope: 'read write',
      audience: 'https://api.example',
    });
    const basic = String(tokenRequest?.headers.authorization).replace(/^Basic /, '');
    expect(Buffer.from(basic, 'base64').toString()).toBe('client-1:secret-xyz-1');
  });

  it('when the tool says client_auth body, the client id and secret go in the token request body', async () => {
    await runner.run(oauth2Tool('body'), {}, { vault });

    const [tokenRequest] = tokenRequests();
    expect(tokenRequest?.headers.authorization).toBeUndefined();
    expect(tokenRequest?.body).toMatchObject({ client_id: 'client-1', client_secret: 'secret-xyz-1' });
  });

  it('when the token has expired, the next call fetches a new one', async () => {
    await runner.run(oauth2Tool(), {}, { vault });
    now += 3600 * 1000;

    const outcome = await runner.run(oauth2Tool(), {}, { vault });

    expect(outcome).toMatchObject({ ok: true, result: { seen: '#2' } });
    expect(tokenRequests()).toHaveLength(2);
  });

  it('when the token is close to expiry but not past the refresh margin, it is still reused', async () => {
    await runner.run(oauth2Tool(), {}, { vault });
    now += 3500 * 1000;

    const outcome = await runner.run(oauth2Tool(), {}, { vault });

    expect(outcome).toMatchObject({ ok: true, result: { seen: '#1' } });
    expect(tokenRequests()).toHaveLength(1);
  });

  it('when the API answers 401 to a cached token, the runner fetches a new token once and the call succeeds', async () => {
    await runner.run(oauth2Tool(), {}, { vault });
    rejectToken = 'token-1';

    const outcome = await runner.run(oauth2Tool(), {}, { vault });

    expect(outcome).toMatchObject({ ok: true, result: { seen: '#2' } });
    expect(tokenRequests()).toHaveLength(2);
    expect(apiRequests()).toHaveLength(3);
  });

  it('when the API keeps answering 401 after a fresh token, the model gets the 401 and no third token is fetched', async () => {
    api.route({
      method: 'GET',
      path: '/v1/denied',
      reply: { status: 401, body: { error: 'invalid_token' } },
    });
    const tool = { ...oauth2Tool(), execution: { method: 'GET' as const, url: `${api.url}/v1/denied` } };

    const outcome = await runner.run(tool, {}, { vault });

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR', detail: { status: 401 } } });
    expect(tokenRequests()).toHaveLength(2);
  });

  it('when calls run concurrently, they share one token request', async () => {
    api.route({
      method: 'POST',
      path: '/oauth/token',
      delayMs: 150,
      reply: () => {
        issued += 1;
        return { body: { access_token: `token-${issued}`, expires_in: 3600 } };
      },
    });

    const outcomes = await Promise.all([1, 2, 3].map(() => runner.run(oauth2Tool(), {}, { vault })));

    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true]);
    expect(tokenRequests()).toHaveLength(1);
  });

  it('when the token endpoint refuses the client, the model gets a TOOL_ERROR with its status', async () => {
    api.route({
      method: 'POST',
      path: '/oauth/token',
      reply: { status: 401, body: { error: 'invalid_client' } },
    });

    const outcome = await runner.run(oauth2Tool(), {}, { vault });

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR', detail: { status: 401 } } });
    if (!outcome.ok) expect(outcome.error.message).toContain('OAuth2 token request');
    expect(apiRequests()).toHaveLength(0);
  });
});
