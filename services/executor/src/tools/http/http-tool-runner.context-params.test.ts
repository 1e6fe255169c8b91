// The task's values a tool asks for through `context_params`, put into real requests to a loopback API.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startRecordingApi, type RecordingApi } from '@agentmesh/testkit';
import { fromHttpPlugin, type ContextParams, type HttpToolExecution } from '@agentmesh/protocol';
import { httpTool, seed000Plugin } from '../__fixtures__/http-tools.js';
import type { TaskContextValues } from './context-params.js';
import { HttpToolRunner } from './http-tool-runner.js';

const guard = { allowHosts: ['127.0.0.1'] };

const task: TaskContextValues = {
  user_id: 'user-42',
  account_id: 'acme',
  account_type: 'user',
  trace_id: '0af7651916cd43dd8448eb211c80319c',
  variables: { tenant: 'north', region: 'eu-1', limit: 7 },
};

describe('HttpToolRunner context_params', () => {
  let api: RecordingApi;
  let runner: HttpToolRunner;

  beforeAll(async () => {
    api = await startRecordingApi({
      routes: [{ method: '*', path: '/v1/orders', reply: { body: { ok: true } } }],
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

  const toolWith = (context_params: ContextParams, execution: Partial<HttpToolExecution> = {}) =>
    httpTool({ method: 'GET', url: `${api.url}/v1/orders`, context_params, ...execution });

  it('when a tool maps user_id, account, trace_id and variables, the API gets them in headers and the query', async () => {
    const tool = toolWith([
      { source: 'user_id', target: 'X-User-Id', location: 'header' },
      { source: 'account_id', target: 'X-Account', location: 'header' },
      { source: 'account_type', target: 'account_type', location: 'query' },
      { source: 'trace_id', target: 'X-Trace', location: 'header' },
      { source: 'variables.tenant', target: 'tenant', location: 'query' },
      { source: 'variables.limit', target: 'X-Limit', location: 'header' },
    ]);

    const outcome = await runner.run(tool, { q: 'shoes' }, { vault: {}, task });

    expect(outcome).toEqual({ ok: true, result: { ok: true } });
    const [request] = await api.waitForRequests(1);
    expect(request?.headers).toMatchObject({
      'x-user-id': 'user-42',
      'x-account': 'acme',
      'x-trace': task.trace_id,
      'x-limit': '7',
    });
    expect(request?.query).toEqual({ q: 'shoes', account_type: 'user', tenant: 'north' });
  });

  it('when the model passes an argument of the same name, the task value is sent, not the model one', async () => {
    const tool = toolWith(
      [
        { source: 'user_id', target: 'user_id', location: 'query' },
        { source: 'user_id', target: 'X-User-Id', location: 'header' },
      ],
      { argument_locations: { 'X-User-Id': 'header' } },
    );

    await runner.run(tool, { user_id: 'admin', 'X-User-Id': 'admin', q: 'x' }, { vault: {}, task });

    const [request] = await api.waitForRequests(1);
    expect(request?.query).toEqual({ user_id: 'user-42', q: 'x' });
    expect(request?.headers['x-user-id']).toBe('user-42');
  });

  it('when the task lacks a variable (or it is null), the parameter is left out, and so is the model value', async () => {
    const tool = toolWith([
      { source: 'variables.missing', target: 'X-Missing', location: 'header' },
      { source: 'variables.nothing', target: 'nothing', location: 'query' },
      { source: 'variables.region', target: 'region', location: 'query' },
    ]);

    const outcome = await runner.run(
      tool,
      { nothing: 'from-model' },
      { vault: {}, task: { ...task, variables: { ...task.variables, nothing: null } } },
    );

    expect(outcome.ok).toBe(true);
    const [request] = await api.waitForRequests(1);
    expect(request?.headers['x-missing']).toBeUndefined();
    expect(request?.query).toEqual({ region: 'eu-1' });
  });

  it('when an auth header has the same name as a context header, the credential wins', async () => {
    const tool = httpTool(
      {
        method: 'GET',
        url: `${api.url}/v1/orders`,
        context_params: [{ source: 'user_id', target: 'Authorization', location: 'header' }],
      },
      { auth: { type: 'bearer', token_source: 'TOKEN' } },
    );

    await runner.run(tool, {}, { vault: { TOKEN: 'tok-1' }, task });

    const [request] = await api.waitForRequests(1);
    expect(request?.headers.authorization).toBe('Bearer tok-1');
  });

  it('when a variable headed for a header holds a line break, the call fails INVALID_REQUEST naming the header only', async () => {
    const tool = toolWith([{ source: 'variables.tenant', target: 'X-Tenant', location: 'header' }]);

    const outcome = await runner.run(
      tool,
      {},
      { vault: {}, task: { ...task, variables: { tenant: 'north\r\nX-Admin: yes' } } },
    );

    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.error.code).toBe('INVALID_REQUEST');
    expect(outcome.error.message).toContain('x-tenant');
    expect(JSON.stringify(outcome.error)).not.toContain('north');
    expect(api.requests).toHaveLength(0);
  });

  it('when a redirect leaves the origin, the context headers are not forwarded', async () => {
    const other = await startRecordingApi({
      routes: [{ method: '*', path: '/landing', reply: { body: { landed: true } } }],
    });
    try {
      const bouncer = await startRecordingApi({
        routes: [
          {
            method: '*',
            path: '/v1/orders',
            // Another port is another origin.
            reply: { status: 302, headers: { location: `${other.url}/landing` } },
          },
        ],
      });
      try {
        const tool = httpTool({
          method: 'GET',
          url: `${bouncer.url}/v1/orders`,
          context_params: [{ source: 'user_id', target: 'X-User-Id', location: 'header' }],
        });
        const outcome = await runner.run(tool, {}, { vault: {}, task });
        expect(outcome).toEqual({ ok: true, result: { landed: true } });
        const [first] = await bouncer.waitForRequests(1);
        expect(first?.headers['x-user-id']).toBe('user-42');
        const [landed] = await other.waitForRequests(1);
        expect(landed?.headers['x-user-id']).toBeUndefined();
      } finally {
        await bouncer.stop();
      }
    } finally {
      await other.stop();
    }
  });

  it("when seed 000's plugin declares context_params in its execution, the converted tool sends them", async () => {
    const plugin = seed000Plugin();
    const tool = fromHttpPlugin({
      ...plugin,
      auth_config: undefined,
      execution: {
        ...plugin.execution,
        base_url: `${api.url}/v1/orders`,
        context_params: [{ source: 'user_id', target: 'X-User-Id', location: 'header' }],
      },
    });

    await runner.run(tool, { keyword: 'acme' }, { vault: {}, task });

    const [request] = await api.waitForRequests(1);
    expect(request?.headers['x-user-id']).toBe('user-42');
  });
});
