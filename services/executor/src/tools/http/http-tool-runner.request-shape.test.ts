// What an argument must not do to the request it goes into: climb the URL path with a `.`/`..` segment, or set a
// header that routes or frames the request (Host, Content-Length, ...). Seed 000 tools and OpenAPI-imported
// tools, against a real server on loopback that records what arrives.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import type { HttpTool } from '@agentmesh/protocol';
import { httpTool } from '../__fixtures__/http-tools.js';
import { importedTool } from '../__fixtures__/openapi-tools.js';
import { HttpToolRunner } from './http-tool-runner.js';
import type { ToolOutcome } from '../tool-outcome.js';

const echoDocument = {
  openapi: '3.0.3',
  info: { title: 'echo', version: '1' },
  paths: {
    '/echo/{id}/profile': {
      get: {
        operationId: 'simpleProfile',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/echo/{id}/labelled': {
      get: {
        operationId: 'labelProfile',
        parameters: [{ name: 'id', in: 'path', required: true, style: 'label', schema: { type: 'string' } }],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/echo/{id}/matrix': {
      get: {
        operationId: 'matrixProfile',
        parameters: [{ name: 'id', in: 'path', required: true, style: 'matrix', schema: { type: 'string' } }],
        responses: { '200': { description: 'ok' } },
      },
    },
    '/status': {
      get: {
        operationId: 'statusWithHeader',
        parameters: [
          { name: 'Host', in: 'header', schema: { type: 'string' } },
          { name: 'Content-Length', in: 'header', schema: { type: 'string' } },
          { name: 'X-Tenant', in: 'header', schema: { type: 'string' } },
        ],
        responses: { '200': { description: 'ok' } },
      },
    },
  },
};

function expectRefused(outcome: ToolOutcome, code: string, mentions: string): void {
  expect(outcome.ok).toBe(false);
  if (outcome.ok) return;
  expect(outcome.error.code).toBe(code);
  expect(outcome.error.message).toContain(mentions);
}

describe('HttpToolRunner keeps arguments inside their place in the request', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;
  const ctx = { vault: {} };

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: ['/echo/:id/:page', '/echo/:page', '/status', '/'].map((path) => ({
        method: '*',
        path,
        reply: { body: { ok: true } },
      })),
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

  const seed000 = (): HttpTool => httpTool({ method: 'GET', url: `${api.url}/echo/{id}/profile` });
  const openApi = (operationId: string): HttpTool => importedTool(echoDocument, { operationId }, api.url);

  describe('path values that are dot segments', () => {
    it.each(['..', '.', '%2e', '.%2E', '%2E%2e'])(
      'when a seed 000 path argument is %j, the model gets INVALID_REQUEST naming it and nothing is sent',
      async (id) => {
        const outcome = await runner.run(seed000(), { id }, ctx);

        expectRefused(outcome, 'INVALID_REQUEST', 'path argument id');
        expect(api.requests).toHaveLength(0);
      },
    );

    it.each([
      ['simpleProfile', '..'],
      ['simpleProfile', '%2e'],
      ['labelProfile', '.'],
    ])(
      'when the OpenAPI operation %s gets the path value %j, the model gets INVALID_REQUEST and nothing is sent',
      async (operationId, id) => {
        const outcome = await runner.run(openApi(operationId), { id }, ctx);

        expectRefused(outcome, 'INVALID_REQUEST', 'path parameter(s) id');
        expect(api.requests).toHaveLength(0);
      },
    );

    it('when a value only looks like dots, it arrives in its segment as sent', async () => {
      const sent = [
        await runner.run(seed000(), { id: '...' }, ctx),
        await runner.run(seed000(), { id: '.env' }, ctx),
        await runner.run(openApi('simpleProfile'), { id: 'a..b' }, ctx),
        await runner.run(openApi('matrixProfile'), { id: '..' }, ctx),
      ];

      expect(sent.every((outcome) => outcome.ok)).toBe(true);
      const requests = await api.waitForRequests(4);
      expect(requests.map((request) => request.path)).toEqual([
        '/echo/.../profile',
        '/echo/.env/profile',
        '/echo/a..b/profile',
        '/echo/;id=../matrix',
      ]);
    });
  });

  describe('headers that route or frame the request', () => {
    it.each([
      'host',
      'Host',
      'content-length',
      'transfer-encoding',
      'connection',
      'proxy-authorization',
      'upgrade',
    ])(
      'when a seed 000 argument placed in the header is named %s, the model gets FORBIDDEN and nothing is sent',
      async (name) => {
        const tool = httpTool({
          method: 'GET',
          url: `${api.url}/status`,
          argument_locations: { [name]: 'header' },
        });

        const outcome = await runner.run(tool, { [name]: 'internal.example' }, ctx);

        expectRefused(outcome, 'FORBIDDEN', `header ${name} cannot be set`);
        expect(api.requests).toHaveLength(0);
      },
    );

    it.each([{ Host: 'internal.example' }, { 'Content-Length': '0' }])(
      'when an OpenAPI header parameter is %j, the model gets FORBIDDEN and nothing is sent',
      async (args) => {
        const outcome = await runner.run(openApi('statusWithHeader'), { ...args, 'X-Tenant': 'acme' }, ctx);

        expectRefused(outcome, 'FORBIDDEN', 'cannot be set from a tool call');
        expect(api.requests).toHaveLength(0);
      },
    );

    it('when the same operation gets only ordinary headers, they arrive and Host names the server', async () => {
      const outcome = await runner.run(openApi('statusWithHeader'), { 'X-Tenant': 'acme' }, ctx);

      expect(outcome).toEqual({ ok: true, result: { ok: true } });
      const [request] = await api.waitForRequests(1);
      expect(request?.headers['x-tenant']).toBe('acme');
      expect(request?.headers.host).toBe(new URL(api.url).host);
    });
  });
});
