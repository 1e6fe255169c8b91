// The runner's outbound guard in action against a real server on 127.0.0.1.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';
import type { ResolvedAddress } from './outbound-guard.js';

const ctx = { vault: {} };

describe('HttpToolRunner SSRF guard', () => {
  let api: RecordingApi;
  let port: string;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        { method: 'GET', path: '/ok', reply: { body: { reached: true } } },
        {
          method: 'GET',
          path: '/to-metadata',
          reply: { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } },
        },
        {
          method: 'GET',
          path: '/to-private',
          reply: { status: 307, headers: { location: 'http://10.0.0.1/admin' } },
        },
      ],
    });
    port = new URL(api.url).port;
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await api.stop();
  });

  async function withRunner<T>(
    guard: ConstructorParameters<typeof HttpToolRunner>[0]['guard'],
    use: (runner: HttpToolRunner) => Promise<T>,
  ): Promise<T> {
    const runner = new HttpToolRunner({ guard });
    try {
      return await use(runner);
    } finally {
      await runner.close();
    }
  }

  it('when 127.0.0.1 is allow-listed, the tool reaches the API', async () => {
    const outcome = await withRunner({ allowHosts: ['127.0.0.1'] }, (runner) =>
      runner.run(httpTool({ method: 'GET', url: `${api.url}/ok` }), {}, ctx),
    );

    expect(outcome).toEqual({ ok: true, result: { reached: true } });
  });

  it('when nothing is allow-listed, a loopback target is denied with FORBIDDEN and no request is sent', async () => {
    const outcome = await withRunner({}, (runner) =>
      runner.run(httpTool({ method: 'GET', url: `${api.url}/ok` }), {}, ctx),
    );

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'FORBIDDEN',
        message: `outbound request to ${api.url} denied: loopback address`,
        detail: { target: api.url, reason: 'loopback address' },
      },
    });
    expect(api.requests).toHaveLength(0);
  });

  it('when a host name resolves to loopback (localhost), the connection is refused at DNS time', async () => {
    const outcome = await withRunner({}, (runner) =>
      runner.run(httpTool({ method: 'GET', url: `http://localhost:${port}/ok` }), {}, ctx),
    );

    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    if (!outcome.ok)
      expect(outcome.error.message).toMatch(/^outbound request to localhost denied: loopback address/);
    expect(api.requests).toHaveLength(0);
  });

  it('when the tool targets the cloud metadata address, it is denied even with loopback allow-listed', async () => {
    const outcome = await withRunner({ allowHosts: ['127.0.0.1'] }, (runner) =>
      runner.run(httpTool({ method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' }), {}, ctx),
    );

    expect(outcome).toMatchObject({
      ok: false,
      error: {
        code: 'FORBIDDEN',
        message: 'outbound request to http://169.254.169.254 denied: cloud metadata address',
      },
    });
  });

  it.each([
    ['/to-metadata', 'cloud metadata address'],
    ['/to-private', 'private address'],
  ])(
    'when an allowed API redirects (%s) to a denied address, the redirect is refused',
    async (path, reason) => {
      const outcome = await withRunner({ allowHosts: ['127.0.0.1'] }, (runner) =>
        runner.run(httpTool({ method: 'GET', url: `${api.url}${path}` }), {}, ctx),
      );

      expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
      if (!outcome.ok) expect(outcome.error.message).toContain(reason);
      expect(api.requests).toHaveLength(1);
    },
  );

  it('when a host name resolves to an allow-listed address, the connection goes to the address that was checked, resolved once', async () => {
    const lookups: string[] = [];
    const resolveHost = async (hostname: string): Promise<readonly ResolvedAddress[]> => {
      lookups.push(hostname);
      return [{ address: '127.0.0.1', family: 4 }];
    };

    const outcome = await withRunner({ allowHosts: ['127.0.0.1'], resolveHost }, (runner) =>
      runner.run(httpTool({ method: 'GET', url: `http://api.pinned.test:${port}/ok` }), {}, ctx),
    );

    expect(outcome).toEqual({ ok: true, result: { reached: true } });
    expect(lookups).toEqual(['api.pinned.test']);
    const [request] = await api.waitForRequests(1);
    expect(request?.headers.host).toBe(`api.pinned.test:${port}`);
  });

  it('when a host name resolves to a private address, the runner returns FORBIDDEN without connecting', async () => {
    const resolveHost = async (): Promise<readonly ResolvedAddress[]> => [{ address: '10.9.8.7', family: 4 }];

    const outcome = await withRunner({ allowHosts: ['127.0.0.1'], resolveHost }, (runner) =>
      runner.run(httpTool({ method: 'GET', url: `http://rebind.test:${port}/ok` }), {}, ctx),
    );

    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('rebind.test resolves to 10.9.8.7');
  });

  it('when the OAuth2 token URL is a denied address, no token request is sent and the call is FORBIDDEN', async () => {
    const tool = httpTool(
      { method: 'GET', url: `${api.url}/ok` },
      {
        auth: {
          type: 'oauth2',
          oauth2: {
            token_url: 'http://169.254.169.254/token',
            client_id_source: 'ID',
            client_secret_source: 'SECRET',
          },
        },
      },
    );

    const outcome = await withRunner({ allowHosts: ['127.0.0.1'] }, (runner) =>
      runner.run(tool, {}, { vault: { ID: 'client', SECRET: 'client-secret' } }),
    );

    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(api.requests).toHaveLength(0);
  });
});
