import type { TaskStatusRecord } from '@agentmesh/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closedPort,
  doneEvent,
  sendJson,
  sendSse,
  sseFrame,
  startStandInGateway,
  TRACE_ID,
  type StandInGateway,
} from './__fixtures__/stand-in-gateway.js';
import { MeshApiError, MeshClientError, MeshProtocolError, MeshUnreachableError } from './errors.js';
import { MeshClient } from './mesh-client.js';

let gateway: StandInGateway;
let client: MeshClient;

const REPLY = {
  trace_id: TRACE_ID,
  events_subject: `mesh.events.acme.${TRACE_ID}`,
  events_url: `/v1/tasks/${TRACE_ID}/events`,
};
const RECORD: TaskStatusRecord = {
  trace_id: TRACE_ID,
  account_id: 'acme',
  workflow_id: 'qcc_agent',
  status: 'running',
  attempt: 1,
  updated_at: '2026-01-01T00:00:01.000Z',
};

beforeEach(async () => {
  gateway = await startStandInGateway();
  client = new MeshClient({
    baseUrl: gateway.url,
    apiKey: 'am_test_key',
    headers: { 'x-request-source': 'tests' },
  });
});

afterEach(async () => {
  await gateway.stop();
});

const caught = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('MeshClient requests', () => {
  it('submit POSTs the request to /v1/tasks with the bearer key, passing idempotency_key and trace_id through, and answers the validated reply', async () => {
    gateway.handle((_request, response) => sendJson(response, 202, REPLY));
    const request = {
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'user' as const, content: 'hello' }],
      idempotency_key: 'order-17',
      trace_id: TRACE_ID,
    };

    const reply = await client.submit(request);

    expect(reply).toEqual(REPLY);
    const [sent] = gateway.requests;
    expect(sent).toMatchObject({ method: 'POST', path: '/v1/tasks' });
    expect(sent!.headers).toMatchObject({
      authorization: 'Bearer am_test_key',
      'content-type': 'application/json',
      'x-request-source': 'tests',
    });
    expect(JSON.parse(sent!.body)).toEqual(request);
  });

  it('when the base URL has a path prefix (a proxy), requests go below it', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, RECORD));
    const prefixed = new MeshClient({ baseUrl: `${gateway.url}/mesh` });

    await prefixed.status(TRACE_ID);

    expect(gateway.requests[0]!.path).toBe(`/mesh/v1/tasks/${TRACE_ID}`);
    expect(gateway.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('when the submit reply lacks events_url, submit throws MeshProtocolError naming it', async () => {
    gateway.handle((_request, response) => sendJson(response, 202, { ...REPLY, events_url: undefined }));

    const error = await caught(
      client.submit({ workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'x' }] }),
    );

    expect(error).toBeInstanceOf(MeshProtocolError);
    expect((error as Error).message).toMatch(/events_url/);
    expect(error).toMatchObject({ code: 'INTERNAL', retryable: false });
  });

  it('when a 2xx answer is not JSON, the call throws MeshProtocolError', async () => {
    gateway.handle(
      (_request, response) => void response.writeHead(200, { 'content-type': 'text/html' }).end('<html>'),
    );

    await expect(client.status(TRACE_ID)).rejects.toThrow(MeshProtocolError);
  });

  it('status GETs /v1/tasks/:id and answers the validated record', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, RECORD));

    expect(await client.status(TRACE_ID)).toEqual(RECORD);
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: `/v1/tasks/${TRACE_ID}` });
  });

  it('when the gateway answers an error body, status throws MeshApiError with its status, code, message and detail', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 400, {
        code: 'INVALID_REQUEST',
        message: 'trace_id: must be 32 hex',
        detail: { issues: [{ path: '', message: 'bad' }] },
      }),
    );

    const error = await caught(client.status('nope'));

    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toBeInstanceOf(MeshClientError);
    expect(error).toMatchObject({
      status: 400,
      code: 'INVALID_REQUEST',
      message: 'trace_id: must be 32 hex',
      detail: { issues: [{ path: '', message: 'bad' }] },
      retryable: false,
    });
  });

  it('when the gateway answers a retryable code, MeshApiError says it is retryable', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 429, { code: 'RATE_LIMITED', message: 'slow down' }),
    );

    await expect(client.status(TRACE_ID)).rejects.toMatchObject({ code: 'RATE_LIMITED', retryable: true });
  });

  it('cancel POSTs the reason to /v1/tasks/:id/cancel and answers the record the gateway returns', async () => {
    const cancelled = { ...RECORD, cancel_requested_at: '2026-01-01T00:00:02.000Z' };
    gateway.handle((_request, response) => sendJson(response, 202, cancelled));

    expect(await client.cancel(TRACE_ID, { reason: 'user changed their mind' })).toEqual(cancelled);
    expect(gateway.requests[0]).toMatchObject({ method: 'POST', path: `/v1/tasks/${TRACE_ID}/cancel` });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ reason: 'user changed their mind' });
  });

  it('when the task has already ended, cancel throws MeshApiError CONFLICT', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 409, {
        code: 'CONFLICT',
        message: 'task has already ended (done)',
        detail: { status: 'done' },
      }),
    );

    await expect(client.cancel(TRACE_ID)).rejects.toMatchObject({
      code: 'CONFLICT',
      status: 409,
      detail: { status: 'done' },
    });
  });

  const APPROVALS = {
    trace_id: TRACE_ID,
    resumed: false,
    approvals: [
      {
        call_id: 'call_1',
        tool: 'pay_invoice',
        reason: 'amount above 1000',
        seq: 3,
        requested_at: '2026-01-01T00:00:01.000Z',
        expires_at: '2026-01-01T01:00:01.000Z',
        state: 'pending',
      },
    ],
  };

  it('approvals GETs /v1/tasks/:id/approvals and answers the validated list', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, APPROVALS));

    expect(await client.approvals(TRACE_ID)).toEqual(APPROVALS);
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: `/v1/tasks/${TRACE_ID}/approvals` });
  });

  it('approve and deny POST {approve, comment} to /v1/tasks/:id/approvals/:call_id, the call id encoded, and answer the validated approvals', async () => {
    const decided = {
      ...APPROVALS,
      resumed: true,
      approvals: [
        { ...APPROVALS.approvals[0], state: 'denied', comment: 'no', decided_at: '2026-01-01T00:00:09.000Z' },
      ],
    };
    gateway.handle((_request, response) => sendJson(response, 200, decided));

    expect(await client.deny(TRACE_ID, 'call/1', { comment: 'no' })).toEqual(decided);
    await client.approve(TRACE_ID, 'call_2');

    expect(gateway.requests[0]).toMatchObject({
      method: 'POST',
      path: `/v1/tasks/${TRACE_ID}/approvals/call%2F1`,
    });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ approve: false, comment: 'no' });
    expect(JSON.parse(gateway.requests[1]!.body)).toEqual({ approve: true });
  });

  it('when the approval reply has an unknown state, decideApproval throws MeshProtocolError', async () => {
    const wrong = { ...APPROVALS, approvals: [{ ...APPROVALS.approvals[0], state: 'maybe' }] };
    gateway.handle((_request, response) => sendJson(response, 200, wrong));

    await expect(client.decideApproval(TRACE_ID, 'call_1', { approve: true })).rejects.toThrow(
      MeshProtocolError,
    );
  });

  it('when the call was decided otherwise already, approve throws MeshApiError CONFLICT with the state', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 409, {
        code: 'CONFLICT',
        message: 'the approval of call call_1 is denied already',
        detail: { call_id: 'call_1', state: 'denied' },
      }),
    );

    await expect(client.approve(TRACE_ID, 'call_1')).rejects.toMatchObject({
      code: 'CONFLICT',
      status: 409,
      detail: { state: 'denied' },
    });
  });

  it('when a proxy answers 502 without an error body, the call throws MeshUnreachableError', async () => {
    gateway.handle(
      (_request, response) =>
        void response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad Gateway</h1>'),
    );

    const error = await caught(client.status(TRACE_ID));

    expect(error).toBeInstanceOf(MeshUnreachableError);
    expect((error as Error).message).toMatch(/502/);
  });

  it('when an error answer has no error body, the call throws MeshProtocolError quoting it', async () => {
    gateway.handle((_request, response) => void response.writeHead(500).end('segfault'));

    await expect(client.status(TRACE_ID)).rejects.toThrow(/HTTP 500 without an error body.*segfault/);
  });

  it('when nothing listens on the port, submit throws MeshUnreachableError with the network failure as cause', async () => {
    const port = await closedPort();
    const unreachable = new MeshClient({
      baseUrl: `http://user:secret@127.0.0.1:${port}`,
      apiKey: 'am_secret_key',
    });

    const error = await caught(
      unreachable.submit({ workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'x' }] }),
    );

    expect(error).toBeInstanceOf(MeshUnreachableError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect((error as Error).message).toContain(`127.0.0.1:${port}`);
    expect((error as Error).message).not.toMatch(/secret/);
  });

  it('when the signal is aborted, the call rejects with the abort reason, not as unreachable', async () => {
    gateway.handle(() => undefined); // never answers
    const abort = new AbortController();
    const pending = caught(client.status(TRACE_ID, { signal: abort.signal }));
    abort.abort(new Error('stop'));

    const error = await pending;

    expect(error).not.toBeInstanceOf(MeshClientError);
    expect((error as Error).message).toBe('stop');
  });

  it('run submits the task and follows its events from the first', async () => {
    gateway.handle((request, response) => {
      if (request.method === 'POST') sendJson(response, 202, REPLY);
      else sendSse(response, sseFrame(doneEvent(1, 'hi')));
    });

    const task = await client.run({
      workflow_id: 'w',
      user_id: 'u',
      messages: [{ role: 'user', content: 'x' }],
    });
    const events = [];
    for await (const event of task.events) events.push(event);

    expect(task.trace_id).toBe(TRACE_ID);
    expect(events).toEqual([doneEvent(1, 'hi')]);
    expect(gateway.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'POST /v1/tasks',
      `GET /v1/tasks/${TRACE_ID}/events`,
    ]);
  });
});
