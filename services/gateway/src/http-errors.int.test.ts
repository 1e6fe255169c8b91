import { ErrorBody } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { exchange, openRaw, parseResponses, type RawResponse } from './__fixtures__/raw-http.js';

const ACME_KEY = 'acme-key-http-errors-0123456789';

let nats: NatsServer;
let gw: TestGateway;
let host: string;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=acme` });
  await putSharedAgents(nats.url, 'w');
  host = new URL(gw.url).host;
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

/** The one response to `request`, written on a bare socket. */
async function rawCall(request: string): Promise<RawResponse> {
  const responses = parseResponses(await exchange(gw.url, request));
  expect(responses).toHaveLength(1);
  return responses[0]!;
}

/** A response carrying exactly the error body, as JSON. */
function expectErrorBody(response: RawResponse, status: number, code: string): ErrorBody {
  expect(response.status).toBe(status);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(response.body) as Record<string, unknown>;
  expect(Object.keys(body).filter((key) => !['code', 'message', 'detail'].includes(key))).toEqual([]);
  const parsed = ErrorBody.parse(body);
  expect(parsed.code).toBe(code);
  return parsed;
}

describe("what Node's HTTP parser refuses is answered with the error body", () => {
  it('header fields over the size limit: 431 INVALID_REQUEST naming the limit', async () => {
    const response = await rawCall(
      `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nX-Padding: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    const body = expectErrorBody(response, 431, 'INVALID_REQUEST');
    expect(body.message).toContain('16384 bytes');
    expect(response.headers.connection).toBe('close');
  });

  it('a request line longer than the header limit: 431 INVALID_REQUEST', async () => {
    const response = await rawCall(`GET /v1/tasks/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
    expectErrorBody(response, 431, 'INVALID_REQUEST');
  });

  it.each([
    ['a request line that is not HTTP', 'GARBAGE\r\n\r\n'],
    ['a method HTTP does not know', `BREW /healthz HTTP/1.1\r\nHost: ${host}\r\n\r\n`],
    ['a header name with a space', `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nBad Header: x\r\n\r\n`],
    [
      'a chunked body whose chunk size is not hex',
      `POST /v1/tasks HTTP/1.1\r\nHost: ${host}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
    ],
  ])('%s: 400 INVALID_REQUEST', async (_case, request) => {
    const body = expectErrorBody(await rawCall(request), 400, 'INVALID_REQUEST');
    expect(body.message).toBe('malformed HTTP request');
  });

  it('an HTTP/1.1 request without Host: 400 INVALID_REQUEST', async () => {
    const body = expectErrorBody(
      await rawCall('GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n'),
      400,
      'INVALID_REQUEST',
    );
    expect(body.message).toContain('Host');
  });

  it('an Expect other than 100-continue: 417 INVALID_REQUEST', async () => {
    const response = await rawCall(
      `POST /v1/tasks HTTP/1.1\r\nHost: ${host}\r\nExpect: 200-ok\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}`,
    );
    expectErrorBody(response, 417, 'INVALID_REQUEST');
  });
});

describe("Fastify's own refusals are answered with the error body", () => {
  it('a path parameter longer than the router reads: 414 INVALID_REQUEST', async () => {
    const response = await rawCall(
      `GET /v1/tasks/${'a'.repeat(500)} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    expectErrorBody(response, 414, 'INVALID_REQUEST');
  });

  it('a URL that is not validly percent-encoded: 400 INVALID_REQUEST', async () => {
    const response = await rawCall(
      `GET /v1/tasks/%zz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    const body = expectErrorBody(response, 400, 'INVALID_REQUEST');
    expect(body.message).toContain('percent-encoded');
  });

  it.each([
    ['an empty JSON body', 400, 'application/json', '', 'empty'],
    ['a body that is not JSON', 400, 'application/json', '{"a":', 'JSON'],
    ['a body with a __proto__ key', 400, 'application/json', '{"__proto__":{"x":1}}', 'JSON'],
    ['a body sent as text/plain', 415, 'text/plain', '{}', 'content type'],
    ['a body sent as a form', 415, 'application/x-www-form-urlencoded', 'a=1', 'content type'],
  ])('%s: %i INVALID_REQUEST', async (_case, status, contentType, body, mention) => {
    const response = await call(gw.url, 'POST', '/v1/tasks', {
      body,
      headers: { ...bearer(ACME_KEY), 'content-type': contentType },
    });
    expect(response.status).toBe(status);
    expect(response.body).toEqual({ code: 'INVALID_REQUEST', message: expect.stringContaining(mention) });
  });

  it.each([
    ['an unknown path', 'GET', '/v2/tasks'],
    ['a method the route does not take', 'DELETE', '/v1/tasks'],
    ['a method no route takes', 'PURGE', '/v1/tasks'],
  ])('%s: 404 NOT_FOUND', async (_case, method, path) => {
    const response = await rawCall(
      `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
    );
    const body = expectErrorBody(response, 404, 'NOT_FOUND');
    expect(body.message).toBe(`no route ${method} ${path}`);
  });
});

describe('while the gateway stops', () => {
  it('an open event stream ends and its connection closes, and a request that arrives is answered 503 SERVICE_UNAVAILABLE with the error body', async () => {
    const stopping = await startTestGateway(nats.url, { API_KEYS: `${ACME_KEY}=acme` });
    const stoppingHost = new URL(stopping.url).host;
    const submitted = await call(stopping.url, 'POST', '/v1/tasks', {
      body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
      headers: bearer(ACME_KEY),
    });
    const stream = openRaw(
      stopping.url,
      `GET /v1/tasks/${submitted.body.trace_id}/events HTTP/1.1\r\nHost: ${stoppingHost}\r\nAuthorization: Bearer ${ACME_KEY}\r\n\r\n`,
    );
    await stream.received((text) => text.includes('text/event-stream'));
    // A connection with a request under way (its body not sent yet), so the server keeps it open while
    // it closes; `100 Continue` says the server has read the request's headers.
    const busy = openRaw(
      stopping.url,
      `POST /v1/tasks HTTP/1.1\r\nHost: ${stoppingHost}\r\ncontent-type: application/json\r\ncontent-length: 2\r\nExpect: 100-continue\r\n\r\n`,
    );
    await busy.received((text) => text.startsWith('HTTP/1.1 100 Continue\r\n\r\n'));

    const stopped = stopping.stop();
    // Shutdown ends the event stream and closes its connection.
    expect(await stream.closed).toMatch(/\r\n0\r\n\r\n$/);
    // The first request completes as it began; the one after it arrives while the gateway stops.
    busy.write(`{}GET /healthz HTTP/1.1\r\nHost: ${stoppingHost}\r\n\r\n`);
    const responses = parseResponses((await busy.closed).replace('HTTP/1.1 100 Continue\r\n\r\n', ''));
    await stopped;
    expect(responses.map((response) => response.status)).toEqual([401, 503]);
    const body = expectErrorBody(responses[1]!, 503, 'SERVICE_UNAVAILABLE');
    expect(body.message).toContain('shutting down');
  });
});

describe('request log lines', () => {
  it('when a request succeeds its line is at debug; when it is refused, at info', async () => {
    const before = gw.logs.length;
    expect((await call(gw.url, 'GET', '/healthz')).status).toBe(200);
    expect((await call(gw.url, 'GET', '/v1/tasks/abc')).status).toBe(401);
    const lines = gw.logs
      .slice(before)
      .map((line) => JSON.parse(line) as { msg?: string; level?: string; route?: string; status?: number })
      .filter((line) => line.msg === 'http request');
    expect(lines.map(({ level, status }) => ({ level, status }))).toEqual([
      { level: 'debug', status: 200 },
      { level: 'info', status: 401 },
    ]);
  });
});
