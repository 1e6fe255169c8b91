// Seed 004 dynamic tools: the model's arguments merged with `fixed_params` (the model wins) and placed by
// `original_schema`, sent as one POST to the tool box proxy at `api_url` through the guarded client.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import type { DynamicToolDefinition } from '@agentmesh/protocol';
import { seed004DynamicTool } from '../__fixtures__/openapi-tools.js';
import { DynamicToolRunner } from './dynamic-tool-runner.js';
import { HttpToolRunner } from '../http/http-tool-runner.js';

const PROXY_PATH = '/api/agent-operator-integration/internal-v1/tool-box/box-1/proxy/tool-1';
const SEED_HEADERS = { 'x-account-id': 'test', 'x-account-type': 'user', 'X-HTTP-Method-Override': 'GET' };
const ctx = { account: { id: 'acct-task', type: 'user' } };

describe('DynamicToolRunner', () => {
  let proxy: RecordingApi;
  let runner: DynamicToolRunner;
  let proxyUrl: string;

  beforeAll(async () => {
    proxy = await startRecordingApi({
      routes: [
        { method: 'POST', path: PROXY_PATH, reply: { body: { entries: [{ id: 'disease_000001' }] } } },
        { method: 'POST', path: '/kn/:kn_id/object-types/:ot_id', reply: { body: { ok: true } } },
        { method: 'POST', path: '/broken', reply: { status: 502, body: { error: 'upstream down' } } },
        { method: 'POST', path: '/slow', delayMs: 2_000, reply: { body: { late: true } } },
      ],
    });
    proxyUrl = `${proxy.url}${PROXY_PATH}`;
    runner = new DynamicToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
  });
  beforeEach(() => {
    proxy.requests.length = 0;
  });
  afterAll(async () => {
    await runner.close();
    await proxy.stop();
  });

  const withFixed = (
    fixed: Partial<DynamicToolDefinition['fixed_params']>,
    apiUrl = proxyUrl,
  ): DynamicToolDefinition => {
    const tool = seed004DynamicTool(apiUrl);
    return { ...tool, fixed_params: { ...tool.fixed_params, ...fixed } };
  };

  it('when the model calls the seed appendix tool, the proxy gets a POST with the fixed headers, the override and the merged body', async () => {
    const tool = withFixed({ header: SEED_HEADERS, body: { limit: 5, condition: { field: 'status' } } });

    const outcome = await runner.run(
      tool,
      {
        kn_id: 'kn_medical',
        ot_id: 'disease',
        include_type_info: true,
        limit: 20,
        sort: [{ field: 'name', direction: 'asc' }],
      },
      ctx,
    );

    expect(outcome).toEqual({ ok: true, result: { entries: [{ id: 'disease_000001' }] } });
    const [request] = await proxy.waitForRequests(1);
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(PROXY_PATH);
    expect(request?.headers).toMatchObject({
      'x-account-id': 'test',
      'x-account-type': 'user',
      'x-http-method-override': 'GET',
      'content-type': 'application/json',
    });
    // The model's limit wins over the fixed one; the fixed condition fills what the model left out.
    expect(request?.body).toEqual({
      limit: 20,
      condition: { field: 'status' },
      sort: [{ field: 'name', direction: 'asc' }],
    });
    // api_url has no {kn_id}/{ot_id}: the path parameters travel in its query rather than being lost.
    expect(request?.query).toEqual({ kn_id: 'kn_medical', ot_id: 'disease', include_type_info: 'true' });
  });

  it('when api_url has path placeholders, they are filled from the model and from fixed path params, the model winning', async () => {
    const tool = withFixed(
      { header: SEED_HEADERS, path: { kn_id: 'kn_fixed', ot_id: 'ot fixed' } },
      `${proxy.url}/kn/{kn_id}/object-types/{ot_id}`,
    );

    const outcome = await runner.run(tool, { kn_id: 'kn_model' }, ctx);

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await proxy.waitForRequests(1);
    expect(request?.path).toBe('/kn/kn_model/object-types/ot%20fixed');
    expect(request?.query).toEqual({});
    expect(request?.body).toEqual({});
  });

  it('when recall fixed a cookie parameter, the proxy gets it as a cookie', async () => {
    const tool = withFixed({ header: SEED_HEADERS, cookie: { session: 's-1' } });

    const outcome = await runner.run(tool, { kn_id: 'k', ot_id: 'o' }, ctx);

    expect(outcome.ok).toBe(true);
    const [request] = await proxy.waitForRequests(1);
    expect(request?.headers.cookie).toBe('session=s-1');
  });

  it('when fixed_params lack the account headers, the task account is sent and a model-supplied account is ignored', async () => {
    const tool = withFixed({ header: { 'X-HTTP-Method-Override': 'GET' } });

    await runner.run(tool, { kn_id: 'k', ot_id: 'o', 'x-account-id': 'someone-else' }, ctx);

    const [request] = await proxy.waitForRequests(1);
    expect(request?.headers['x-account-id']).toBe('acct-task');
    expect(request?.headers['x-account-type']).toBe('user');
    expect(request?.headers['x-http-method-override']).toBe('GET');
  });

  it.each([
    ['a whole document without a single operation', { openapi: '3.0.3', info: {}, paths: {} }],
    ['a parameter list that is not a list', { parameters: 'header: x-trace' }],
  ])(
    'when original_schema is %s, the naming rule places the arguments: x-… headers, the rest body',
    async (_label, originalSchema) => {
      const tool = {
        ...withFixed({ header: SEED_HEADERS, body: { q: 'fixed' } }),
        original_schema: originalSchema,
      };

      const outcome = await runner.run(tool, { 'X-Trace': 'trace-1', q: 'from model', page: 2 }, ctx);

      expect(outcome.ok).toBe(true);
      const [request] = await proxy.waitForRequests(1);
      expect(request?.headers['x-trace']).toBe('trace-1');
      expect(request?.headers['x-http-method-override']).toBe('GET');
      expect(request?.body).toEqual({ q: 'from model', page: 2 });
      expect(request?.query).toEqual({});
    },
  );

  it('when a path placeholder of api_url gets no value, the model gets INVALID_REQUEST naming it and nothing is sent', async () => {
    const tool = withFixed({ header: SEED_HEADERS }, `${proxy.url}/kn/{kn_id}/object-types/{ot_id}`);

    const outcome = await runner.run(tool, { kn_id: 'k' }, ctx);

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(outcome.error.message).toContain('ot_id');
    expect(proxy.requests).toHaveLength(0);
  });

  it('when a header argument holds a line break, the model gets INVALID_REQUEST and nothing is sent', async () => {
    const tool = { ...withFixed({ header: SEED_HEADERS }), original_schema: { parameters: 'unreadable' } };

    const outcome = await runner.run(tool, { 'x-trace': 'a\r\nx-injected: 1' }, ctx);

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(proxy.requests).toHaveLength(0);
  });

  it.each([
    ['the model', '..'],
    ['the model', '%2e'],
    ['fixed_params', '.'],
  ] as const)(
    'when %s puts %j into a path placeholder of api_url, the model gets INVALID_REQUEST and nothing is sent',
    async (source, value) => {
      const args = source === 'the model' ? { kn_id: value } : {};
      const fixedPath = source === 'fixed_params' ? { kn_id: value } : {};
      const tool = withFixed(
        { header: SEED_HEADERS, path: { ot_id: 'o', ...fixedPath } },
        `${proxy.url}/kn/{kn_id}/object-types/{ot_id}`,
      );

      const outcome = await runner.run(tool, args, ctx);

      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe('INVALID_REQUEST');
      expect(outcome.error.message).toContain('kn_id would make a "." or ".." path segment');
      expect(proxy.requests).toHaveLength(0);
    },
  );

  const hostHeaderSchema = { parameters: [{ name: 'Host', in: 'header', schema: { type: 'string' } }] };
  it.each([
    ['fixed_params', { ...SEED_HEADERS, Host: 'internal.example' }, undefined, {}],
    ['fixed_params', { ...SEED_HEADERS, 'Transfer-Encoding': 'chunked' }, undefined, {}],
    [
      'a model argument declared as a header by original_schema',
      SEED_HEADERS,
      hostHeaderSchema,
      { Host: 'internal.example' },
    ],
  ] as const)(
    'when %s aims at a header that routes or frames the request, the model gets FORBIDDEN and nothing is sent',
    async (_source, header, originalSchema, args) => {
      const tool = {
        ...withFixed({ header }),
        ...(originalSchema === undefined ? {} : { original_schema: originalSchema }),
      };

      const outcome = await runner.run(tool, { kn_id: 'k', ot_id: 'o', ...args }, ctx);

      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe('FORBIDDEN');
      expect(outcome.error.message).toContain('cannot be set from a tool call');
      expect(proxy.requests).toHaveLength(0);
    },
  );

  it('when the proxy answers 502, the model gets TOOL_ERROR with the status and a body excerpt', async () => {
    const outcome = await runner.run(withFixed({ header: SEED_HEADERS }, `${proxy.url}/broken`), {}, ctx);

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('TOOL_ERROR');
    expect(outcome.error.detail).toEqual({ status: 502, body: '{"error":"upstream down"}' });
  });

  it('when the proxy is slower than the time budget, the model gets TOOL_TIMEOUT', async () => {
    const impatient = new DynamicToolRunner({ guard: { allowHosts: ['127.0.0.1'] }, defaultTimeoutMs: 100 });
    try {
      const outcome = await impatient.run(withFixed({ header: SEED_HEADERS }, `${proxy.url}/slow`), {}, ctx);

      expect(outcome.ok).toBe(false);
      if (!outcome.ok) expect(outcome.error.code).toBe('TOOL_TIMEOUT');
    } finally {
      await impatient.close();
    }
  });

  it('when the proxy is loopback and not allow-listed, the outbound guard refuses it and nothing is sent', async () => {
    const guarded = new DynamicToolRunner({ guard: {} });
    try {
      const outcome = await guarded.run(withFixed({ header: SEED_HEADERS }), { kn_id: 'k', ot_id: 'o' }, ctx);

      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe('FORBIDDEN');
      expect(proxy.requests).toHaveLength(0);
    } finally {
      await guarded.close();
    }
  });

  it('when it shares the HTTP runner client, calls go through that client and closing it stays with the HTTP runner', async () => {
    const http = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] } });
    const shared = new DynamicToolRunner({ client: http.client });
    try {
      await shared.close();
      const outcome = await shared.run(withFixed({ header: SEED_HEADERS }), { kn_id: 'k', ot_id: 'o' }, ctx);

      expect(outcome.ok).toBe(true);
      await proxy.waitForRequests(1);
    } finally {
      await http.close();
    }
  });
});
