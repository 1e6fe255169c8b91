// Canary secrets: APIs that echo requests back must not carry a vault value, a derived credential or an OAuth2
// token into what the runner returns, whether the call fails or succeeds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi, type RoutedRequest } from '@agentmesh/testkit';
import type { AuthConfig, HttpTool } from '@agentmesh/protocol';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';
import type { ToolOutcome } from '../tool-outcome.js';

const CANARY = {
  API_TOKEN: 'canary-token-5b1d7e9a',
  QUERY_KEY: 'canary/query key+7c2e',
  USER: 'canary-user-0f3b',
  PASS: 'canary-pass-91aa',
  CLIENT_ID: 'canary-client-id-44d0',
  CLIENT_SECRET: 'canary-client-secret-e3c1',
};
const ACCESS_TOKEN = 'canary-access-token-8d2f';

function echo(status: number) {
  return (request: RoutedRequest) => ({
    status,
    body: {
      youSent: { path: request.path, query: request.query, headers: request.headers, body: request.bodyText },
    },
  });
}

function leaks(outcome: ToolOutcome): string[] {
  const text = JSON.stringify(outcome);
  const basic = Buffer.from(`${CANARY.USER}:${CANARY.PASS}`).toString('base64');
  const clientBasic = Buffer.from(`${CANARY.CLIENT_ID}:${CANARY.CLIENT_SECRET}`).toString('base64');
  return [
    ...Object.values(CANARY),
    encodeURIComponent(CANARY.QUERY_KEY),
    basic,
    clientBasic,
    ACCESS_TOKEN,
  ].filter((secret) => text.includes(secret));
}

describe('HttpToolRunner canary secrets', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        { method: '*', path: '/echo-500', reply: echo(500) },
        { method: '*', path: '/echo-200', reply: echo(200) },
        {
          method: '*',
          path: '/echo-text',
          reply: (request) => ({ status: 502, body: JSON.stringify(request.headers) }),
        },
        // A secret cut in half by the excerpt limit (2 KiB) and by the answer limit (64 KiB).
        {
          method: '*',
          path: '/cut-error',
          reply: { status: 500, body: `${'a'.repeat(2048 - 6)}${CANARY.API_TOKEN}` },
        },
        { method: '*', path: '/cut-answer', reply: { body: `${'a'.repeat(65536 - 6)}${CANARY.API_TOKEN}` } },
        {
          method: 'POST',
          path: '/oauth/token',
          reply: { body: { access_token: ACCESS_TOKEN, expires_in: 600 } },
        },
        { method: 'POST', path: '/oauth/echo-token', reply: echo(400) },
      ],
    });
    runner = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  const oauth2 = (tokenPath: string): AuthConfig => ({
    type: 'oauth2',
    oauth2: {
      token_url: `${api.url}${tokenPath}`,
      client_id_source: 'CLIENT_ID',
      client_secret_source: 'CLIENT_SECRET',
    },
  });
  const tool = (path: string, auth: AuthConfig, method: 'GET' | 'POST' = 'POST'): HttpTool =>
    httpTool({ method, url: `${api.url}${path}` }, { auth });
  const apiKeyEverywhere: AuthConfig = {
    type: 'bearer',
    token_source: 'API_TOKEN',
    mapping: [{ source: 'QUERY_KEY', target: 'key', location: 'query' }],
  };

  it.each<[string, () => HttpTool]>([
    ['a 500 echoing bearer header and query key', () => tool('/echo-500', apiKeyEverywhere)],
    ['a 502 echoing headers as text', () => tool('/echo-text', apiKeyEverywhere, 'GET')],
    [
      'a 500 echoing Basic credentials',
      () => tool('/echo-500', { type: 'basic', username_source: 'USER', password_source: 'PASS' }),
    ],
    ['a 500 echoing the OAuth2 access token', () => tool('/echo-500', oauth2('/oauth/token'))],
    ['a token endpoint echoing the client credentials', () => tool('/echo-500', oauth2('/oauth/echo-token'))],
  ])('when the API answers %s, no secret appears in the outcome', async (_case, makeTool) => {
    const outcome = await runner.run(makeTool(), { note: 'hello' }, { vault: CANARY });

    expect(outcome.ok).toBe(false);
    // The echo did arrive (so the test can fail): the non-secret argument is in there.
    expect(JSON.stringify(outcome)).toMatch(/hello|REDACTED/);
    expect(leaks(outcome)).toEqual([]);
  });

  it('when a successful answer echoes the credentials, they are scrubbed from the result too', async () => {
    const outcome = await runner.run(
      tool('/echo-200', apiKeyEverywhere),
      { note: 'hello' },
      { vault: CANARY },
    );

    expect(outcome.ok).toBe(true);
    expect(JSON.stringify(outcome)).toContain('[REDACTED]');
    expect(leaks(outcome)).toEqual([]);
  });

  it.each(['/cut-error', '/cut-answer'])(
    'when the body is cut (%s) in the middle of a secret, the part before the cut is scrubbed too',
    async (path) => {
      const outcome = await runner.run(tool(path, apiKeyEverywhere, 'GET'), {}, { vault: CANARY });

      const text = JSON.stringify(outcome);
      expect(text).toContain('aaaa[REDACTED]');
      expect(text).not.toContain(CANARY.API_TOKEN.slice(0, 6));
    },
  );

  it('when the request cannot be sent at all, the error names no secret either', async () => {
    const broken = httpTool(
      { method: 'GET', url: 'http://127.0.0.1:1/unreachable' },
      { auth: apiKeyEverywhere },
    );

    const outcome = await runner.run(broken, {}, { vault: CANARY });

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    expect(leaks(outcome)).toEqual([]);
  });
});
