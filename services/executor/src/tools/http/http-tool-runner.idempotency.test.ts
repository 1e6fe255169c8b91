// The idempotency key of an HTTP tool call (`Idempotency-Key: <trace_id>:<call_id>`), the same when a
// redelivered task runs the call again, so the API can tell a repeat from a new request. Real server on
// loopback.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { httpTool } from '../__fixtures__/http-tools.js';
import { importedTool } from '../__fixtures__/openapi-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';

const document = {
  openapi: '3.0.3',
  info: { title: 'payments', version: '1' },
  paths: {
    '/payments': {
      post: {
        operationId: 'pay',
        parameters: [{ name: 'Idempotency-Key', in: 'header', schema: { type: 'string' } }],
        responses: { '200': { description: 'ok' } },
      },
    },
  },
};

describe('HttpToolRunner idempotency keys', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [{ method: '*', path: '/payments', reply: { body: { ok: true } } }],
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

  it('a call sends the Idempotency-Key it is given, twice the same for the same call', async () => {
    const tool = httpTool({ method: 'POST', url: `${api.url}/payments` });
    const key = `${'a'.repeat(32)}:call_1`;
    for (let run = 0; run < 2; run++)
      await runner.run(tool, { amount: 5 }, { vault: {}, idempotencyKey: key });

    expect(api.requests.map((request) => request.headers['idempotency-key'])).toEqual([key, key]);
  });

  it('a tool whose own definition sets Idempotency-Key keeps its value', async () => {
    const tool = importedTool(document, { operationId: 'pay' }, api.url);
    await runner.run(tool, { 'Idempotency-Key': 'order-77' }, { vault: {}, idempotencyKey: 't:call_1' });

    expect(api.requests[0]?.headers['idempotency-key']).toBe('order-77');
  });

  it('without a key nothing is added', async () => {
    await runner.run(httpTool({ method: 'POST', url: `${api.url}/payments` }), {}, { vault: {} });
    expect(api.requests[0]?.headers['idempotency-key']).toBeUndefined();
  });
});
