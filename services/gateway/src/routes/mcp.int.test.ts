/**
 * `/mcp` of a real gateway (in-process, real NATS) with the SDK's MCP client: what the gateway decides
 * on its own, without an executor (submitted tasks stay queued): session caps, the key header, GET, and
 * the gateway stopping during a call. The whole-mesh behaviour (progress, answers, cancel) is in
 * tests/mesh/src/mcp-server.int.test.ts.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION, type Progress } from '@modelcontextprotocol/sdk/types.js';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, call, startTestGateway, type TestGateway } from '../__fixtures__/gateway-harness.js';

const ACME_KEY = 'acme-key-mcp-6f1e2d3c4b5a6978';
const ADMIN_KEY = 'admin-key-mcp-99aa88bb77cc66dd';
const LONGCO_KEY = 'longco-key-mcp-0a1b2c3d4e5f6071';
/** A key of its own, so its caller's session cap holds only the sessions of the test using it. */
const CLOSER_KEY = 'closer-key-mcp-1b2c3d4e5f607182';
const ENV = {
  API_KEYS: `${ACME_KEY}=acme,${LONGCO_KEY}=longco,${CLOSER_KEY}=acme`,
  ADMIN_API_KEYS: ADMIN_KEY,
  MCP_MAX_SESSIONS_PER_CALLER: '2',
};

let nats: NatsServer;
let gw: TestGateway;
const clients: Client[] = [];

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, ENV);
  const put = await call(gw.url, 'PUT', '/v1/admin/agents/queued_agent', {
    headers: { ...bearer(ADMIN_KEY), 'x-account-id': 'acme' },
    body: { workflow_id: 'queued_agent', model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } },
  });
  expect(put.status).toBe(201);
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  await gw?.stop();
  await nats?.stop();
});

async function connectMcp(url: string, headers: Record<string, string> = bearer(ACME_KEY)): Promise<Client> {
  const client = new Client({ name: 'gateway-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: {
    protocolVersion: LATEST_PROTOCOL_VERSION,
    capabilities: {},
    clientInfo: { name: 't', version: '1' },
  },
};
const mcpHeaders = { ...bearer(ACME_KEY), accept: 'application/json, text/event-stream' };

/** Starts a call whose task stays queued (no executor runs here); resolves once the task is queued. */
async function callInFlight(client: Client): Promise<{ traceId: string; settled: Promise<unknown> }> {
  const progress: Progress[] = [];
  const settled = client
    .callTool({ name: 'run_queued_agent', arguments: { message: 'hi' } }, undefined, {
      onprogress: (update) => progress.push(update),
    })
    .catch((error: unknown) => error);
  const traceId = await waitFor(() => /^task ([0-9a-f]{32}) queued$/.exec(progress[0]?.message ?? '')?.[1], {
    description: 'the task to be queued',
  });
  return { traceId, settled };
}

describe('/mcp on one gateway', () => {
  it('the key may come in x-api-key too, and GET /mcp (no server stream) is 405 with the gateway error body', async () => {
    const client = await connectMcp(gw.url, { 'x-api-key': ACME_KEY });

    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['run_queued_agent']);
    const get = await call(gw.url, 'GET', '/mcp', { headers: mcpHeaders });
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST, DELETE');
    expect(get.body).toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('a caller at its session cap: an idle session is closed for a new one, and with every one busy initialize is 429 RATE_LIMITED', async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    const idle = await connectMcp(gw.url);
    const busy = await connectMcp(gw.url);
    const inFlight = [await callInFlight(busy)];

    // The cap is 2: the idle session makes room and is gone.
    const third = await connectMcp(gw.url);
    await expect(idle.listTools()).rejects.toMatchObject({ code: 404 });
    inFlight.push(await callInFlight(third));

    const refused = await call(gw.url, 'POST', '/mcp', { headers: mcpHeaders, body: initialize });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.body).toMatchObject({ code: 'RATE_LIMITED', detail: { scope: 'caller', limit: 2 } });

    // Closing a busy client's connection ends its call, and its session becomes idle (and evictable).
    await busy.close();
    await waitFor(
      async () =>
        (await call(gw.url, 'POST', '/mcp', { headers: mcpHeaders, body: initialize })).status === 200,
      {
        description: 'a session to become free',
      },
    );
    expect(await inFlight[0]!.settled).toBeInstanceOf(Error);
  });

  it('when the gateway stops during an MCP call, the call answers SERVICE_UNAVAILABLE with the trace id and its task is not cancelled', async () => {
    const doomed = await startTestGateway(nats.url, ENV);
    const client = await connectMcp(doomed.url);
    const { traceId, settled } = await callInFlight(client);

    await doomed.stop();

    expect(await settled).toMatchObject({
      isError: true,
      structuredContent: { trace_id: traceId, error: { code: 'SERVICE_UNAVAILABLE', retryable: false } },
    });
    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(status.body).toMatchObject({ trace_id: traceId, status: 'queued' });
    expect(status.body).not.toHaveProperty('cancel_requested_at');
  });
});

describe('clients that are not ours', () => {
  it('when a client ends its session with a body-less DELETE naming content-type application/json (as the Python SDK does), the session is gone and no longer counts against the caller cap', async () => {
    // The TypeScript SDK sends its requestInit headers on DELETE too: this is the Python SDK's request.
    const headers = { ...bearer(CLOSER_KEY), 'content-type': 'application/json' };
    const kept = await connectMcp(gw.url, headers);
    const ended = await connectMcp(gw.url, headers);
    const endedTransport = ended.transport as StreamableHTTPClientTransport;
    const endedId = endedTransport.sessionId!;

    await endedTransport.terminateSession();

    const reused = await call(gw.url, 'POST', '/mcp', {
      headers: {
        ...mcpHeaders,
        ...bearer(CLOSER_KEY),
        'mcp-session-id': endedId,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      },
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
    });
    expect(reused.status).toBe(404);
    // The cap is 2: had the ended session stayed, this one would evict the least recently used, `kept`.
    await connectMcp(gw.url, headers);
    expect((await kept.listTools()).tools.map((tool) => tool.name)).toEqual(['run_queued_agent']);
  });

  it('a raw body-less DELETE with content-type application/json ends the session: 200, not 400', async () => {
    const client = await connectMcp(gw.url);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;

    const response = await fetch(new URL('/mcp', gw.url), {
      method: 'DELETE',
      headers: {
        ...bearer(ACME_KEY),
        'content-type': 'application/json',
        'content-length': '0',
        'mcp-session-id': sessionId,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      },
    });

    expect(response.status).toBe(200);
    await expect(client.listTools()).rejects.toMatchObject({ code: 404 });
  });

  it.each([
    ['/mcp', 'POST', initialize],
    ['/v1/tasks', 'POST', { workflow_id: 'queued_agent', user_id: 'u', messages: [] }],
    ['/v1/agents', 'GET', undefined],
    ['/v1/models (the OpenAI façade)', 'GET', undefined],
  ])(
    'a wrong key on %s is 401 with WWW-Authenticate: Bearer, so a client reports the key instead of starting OAuth',
    async (path, method, body) => {
      const response = await call(gw.url, method, path.split(' ')[0]!, {
        headers: { ...mcpHeaders, ...bearer('not-a-key-of-this-mesh-000000') },
        ...(body === undefined ? {} : { body }),
      });

      expect(response.status).toBe(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="agentmesh"');
      // The OpenAI façade answers in OpenAI's error shape.
      expect(response.body.code ?? response.body.error.type).toMatch(/^(UNAUTHORIZED|authentication_error)$/);
    },
  );
});

describe('a call cancelled with notifications/cancelled', () => {
  it('ends its response stream (MCP sends no answer to it) and cancels its task', async () => {
    const client = await connectMcp(gw.url);
    const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
    const headers = {
      ...mcpHeaders,
      'content-type': 'application/json',
      'mcp-session-id': sessionId,
      'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
    };
    const response = await fetch(new URL('/mcp', gw.url), {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 41,
        method: 'tools/call',
        params: { name: 'run_queued_agent', arguments: { message: 'hi' }, _meta: { progressToken: 'p' } },
      }),
    });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let received = '';
    let traceId: string | undefined;
    while (traceId === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended early: ${received}`);
      received += value;
      traceId = /task ([0-9a-f]{32}) queued/.exec(received)?.[1];
    }

    const cancel = await call(gw.url, 'POST', '/mcp', {
      headers,
      body: {
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: 41, reason: 'enough' },
      },
    });
    expect(cancel.status).toBe(202);

    // The stream ends without a result for request 41.
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      received += value;
    }
    expect(received).not.toContain('"result"');
    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(ACME_KEY) });
    expect(status.body).toMatchObject({ status: 'queued', cancel_requested_at: expect.any(String) });
  });
});

describe('a call the gateway refuses', () => {
  it('arguments that do not fit the input schema are an isError result with INVALID_REQUEST, and nothing is submitted', async () => {
    const client = await connectMcp(gw.url);

    const result = await client.callTool({ name: 'run_queued_agent', arguments: { message: '', extra: 1 } });

    expect(result).toMatchObject({
      isError: true,
      structuredContent: { error: { code: 'INVALID_REQUEST' } },
    });
    expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/^INVALID_REQUEST: arguments: /);
    expect(result.structuredContent).not.toHaveProperty('trace_id');
  });

  it('a call whose `version` the agent does not keep is an isError result with NOT_FOUND naming it; `version` is in the input schema', async () => {
    const client = await connectMcp(gw.url);
    const [tool] = (await client.listTools()).tools;
    expect(tool?.inputSchema.properties).toHaveProperty('version');

    const result = await client.callTool({
      name: 'run_queued_agent',
      arguments: { message: 'hi', version: 9 },
    });

    expect(result).toMatchObject({ isError: true, structuredContent: { error: { code: 'NOT_FOUND' } } });
    expect((result.content as Array<{ text: string }>)[0]!.text).toContain('version 9');
  });

  it.each([
    [
      'the running-task cap of the API key',
      { MAX_RUNNING_TASKS_PER_API_KEY: '1' },
      { scope: 'api_key', limit_running: 1 },
    ],
    [
      'the event stream cap of the caller',
      { SSE_MAX_STREAMS_PER_CALLER: '1' },
      { scope: 'caller', limit: 1 },
    ],
  ])('a call beyond %s is an isError result with RATE_LIMITED and its detail', async (_what, env, detail) => {
    const limited = await startTestGateway(nats.url, { ...ENV, ...env });
    try {
      const client = await connectMcp(limited.url);
      await callInFlight(client);

      const result = await client.callTool({ name: 'run_queued_agent', arguments: { message: 'one more' } });

      expect(result).toMatchObject({
        isError: true,
        structuredContent: { error: { code: 'RATE_LIMITED', detail } },
      });
      await client.close();
    } finally {
      await limited.stop();
    }
  });
});

describe('an agent whose workflow id is too long for run_<id>', () => {
  it('is listed under its cut and digested name, and calling that name runs it', async () => {
    const workflowId = `${'long'.repeat(30)}.agent`;
    // POST: the path of a PUT would be longer than the router reads.
    const put = await call(gw.url, 'POST', '/v1/admin/agents', {
      headers: { ...bearer(ADMIN_KEY), 'x-account-id': 'longco' },
      body: { workflow_id: workflowId, model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' } },
    });
    expect(put.status).toBe(201);
    const client = await connectMcp(gw.url, bearer(LONGCO_KEY));

    const [tool] = (await client.listTools()).tools;
    expect(tool!.name).toMatch(/^run_(long){27}lon_[0-9a-f]{12}$/);
    expect(tool!.name).toHaveLength(128);
    const progress: Progress[] = [];
    void client
      .callTool({ name: tool!.name, arguments: { message: 'hi' } }, undefined, {
        onprogress: (update) => progress.push(update),
      })
      .catch(() => undefined);
    const traceId = await waitFor(() => /^task ([0-9a-f]{32}) queued$/.exec(progress[0]?.message ?? '')?.[1]);

    const status = await call(gw.url, 'GET', `/v1/tasks/${traceId}`, { headers: bearer(LONGCO_KEY) });
    expect(status.body).toMatchObject({ workflow_id: workflowId, account_id: 'longco' });
  });
});

describe('a browser page calling /mcp', () => {
  it('from an origin not allowed is refused 403 FORBIDDEN before any session opens; from the gateway own origin it is served', async () => {
    await Promise.all(clients.splice(0).map((client) => client.close()));
    const foreign = await call(gw.url, 'POST', '/mcp', {
      headers: { ...mcpHeaders, origin: 'http://rebound.example' },
      body: initialize,
    });
    expect(foreign.status).toBe(403);
    expect(foreign.body).toMatchObject({ code: 'FORBIDDEN' });
    expect(foreign.headers['mcp-session-id']).toBeUndefined();

    const own = await call(gw.url, 'POST', '/mcp', {
      headers: { ...mcpHeaders, origin: new URL(gw.url).origin },
      body: initialize,
    });
    expect(own.status).toBe(200);
    expect(own.headers['mcp-session-id']).toMatch(/.+/);
  });
});
