// What the model gets back: answers, API errors, timeouts, cancellation, oversized bodies, redirects.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { findFreePort, startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { httpTool } from '../__fixtures__/http-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';

const guard = { allowHosts: ['127.0.0.1'] };
const ctx = { vault: {} };

describe('HttpToolRunner responses', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [
        { method: 'GET', path: '/json', reply: { body: { items: [{ id: 1 }] } } },
        { method: 'GET', path: '/text', reply: { body: 'plain words' } },
        { method: 'GET', path: '/empty', reply: { status: 204 } },
        { method: 'GET', path: '/boom', reply: { status: 500, body: { error: 'database on fire' } } },
        { method: 'GET', path: '/slow', delayMs: 3000, reply: { body: { late: true } } },
        { method: 'GET', path: '/big', reply: { body: 'x'.repeat(200_000) } },
        { method: 'GET', path: '/hop/:n', reply: (request) => hop(Number(request.params.n)) },
        { method: '*', path: '/see-other', reply: { status: 303, headers: { location: '/json' } } },
      ],
    });
    runner = new HttpToolRunner({ guard, maxResponseBytes: 1024, maxRedirects: 3 });
  });
  beforeEach(() => {
    api.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await api.stop();
  });

  function hop(n: number) {
    return n <= 0 ? { body: { arrived: true } } : { status: 302, headers: { location: `/hop/${n - 1}` } };
  }
  const get = (path: string, extra = {}) => httpTool({ method: 'GET', url: `${api.url}${path}` }, extra);

  it('when the API answers JSON, the model gets the parsed value', async () => {
    expect(await runner.run(get('/json'), {}, ctx)).toEqual({ ok: true, result: { items: [{ id: 1 }] } });
  });

  it('when the API answers text, the model gets the text', async () => {
    expect(await runner.run(get('/text'), {}, ctx)).toEqual({ ok: true, result: 'plain words' });
  });

  it('when the API answers with no body, the model gets null', async () => {
    expect(await runner.run(get('/empty'), {}, ctx)).toEqual({ ok: true, result: null });
  });

  it('when the API answers 500, the model gets TOOL_ERROR with the status and an excerpt of the body', async () => {
    const outcome = await runner.run(get('/boom'), {}, ctx);

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'TOOL_ERROR',
        message: `HTTP 500 Internal Server Error from GET ${api.url}/boom: {"error":"database on fire"}`,
        detail: { status: 500, body: '{"error":"database on fire"}' },
      },
    });
  });

  it('when the API is slower than the tool timeout, the model gets TOOL_TIMEOUT', async () => {
    // The API answers only after the runner has given up: TOOL_TIMEOUT can only come from the tool's own
    // timer, on any machine under any load (no clock is read).
    let answer = (): void => undefined;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    api.route({
      method: 'GET',
      path: '/held',
      reply: async () => {
        await answered;
        return { body: { late: true } };
      },
    });

    try {
      const outcome = await runner.run(get('/held', { timeout_ms: 200 }), {}, ctx);

      expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_TIMEOUT' } });
      if (!outcome.ok) expect(outcome.error.message).toContain('200 ms');
    } finally {
      answer();
    }
  });

  it('when the task is cancelled during the call, the outcome is CANCELLED', async () => {
    const controller = new AbortController();
    const pending = runner.run(get('/slow'), {}, { vault: {}, signal: controller.signal });
    await api.waitForRequests(1);

    controller.abort();

    expect(await pending).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
  });

  it('when the task was cancelled before the call, nothing is sent', async () => {
    const outcome = await runner.run(get('/json'), {}, { vault: {}, signal: AbortSignal.abort() });

    expect(outcome).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect(api.requests).toHaveLength(0);
  });

  it('when the answer is larger than maxResponseBytes, the model gets its beginning with a marker and truncated: true', async () => {
    const outcome = await runner.run(get('/big'), {}, ctx);

    expect(outcome.ok && outcome.truncated).toBe(true);
    const text = outcome.ok ? String(outcome.result) : '';
    expect(text.startsWith('x'.repeat(1024))).toBe(true);
    expect(text.slice(1024)).toMatch(/^\n…\[truncated: the response was larger than 1024 bytes/);
  });

  it('when the API redirects within the limit, the runner follows to the final answer', async () => {
    const outcome = await runner.run(get('/hop/3'), {}, ctx);

    expect(outcome).toEqual({ ok: true, result: { arrived: true } });
    expect(api.requests.map((request) => request.path)).toEqual(['/hop/3', '/hop/2', '/hop/1', '/hop/0']);
  });

  it('when the API redirects more often than maxRedirects, the model gets TOOL_ERROR', async () => {
    const outcome = await runner.run(get('/hop/4'), {}, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('redirected more than 3 times');
    expect(api.requests).toHaveLength(4);
  });

  it('when a POST is answered 303, the runner fetches the new location with a body-less GET', async () => {
    const tool = httpTool({ method: 'POST', url: `${api.url}/see-other` });

    const outcome = await runner.run(tool, { name: 'x' }, ctx);

    expect(outcome).toEqual({ ok: true, result: { items: [{ id: 1 }] } });
    const [, followed] = await api.waitForRequests(2);
    expect(followed).toMatchObject({ method: 'GET', path: '/json', bodyText: '' });
    expect(followed?.headers['content-type']).toBeUndefined();
  });

  it('when nothing listens at the address, the model gets TOOL_ERROR saying the connection failed', async () => {
    const port = await findFreePort();

    const outcome = await runner.run(httpTool({ method: 'GET', url: `http://127.0.0.1:${port}/x` }), {}, ctx);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_ERROR' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('ECONNREFUSED');
  });
});

describe('HttpToolRunner reading an endless answer', () => {
  let server: Server;
  let origin: string;
  let streamClosed: Promise<void>;

  beforeAll(async () => {
    let onClosed: () => void = () => {};
    streamClosed = new Promise((resolve) => (onClosed = resolve));
    // An answer that never ends: only a reader that stops at its limit can return.
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = `[${'"0123456789",'.repeat(1000)}`;
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', onClosed);
      pump();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('when the body never ends, the runner stops at maxResponseBytes, closes the stream and returns the beginning', async () => {
    const runner = new HttpToolRunner({ guard, maxResponseBytes: 4096, defaultTimeoutMs: 10_000 });

    const outcome = await runner.run(httpTool({ method: 'GET', url: `${origin}/stream` }), {}, ctx);
    await runner.close();

    expect(outcome).toMatchObject({ ok: true, truncated: true });
    expect(String(outcome.ok && outcome.result).length).toBeLessThan(4096 + 200);
    await streamClosed;
  });
});
