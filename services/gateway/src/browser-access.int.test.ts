import { openMeshBuckets, TaskEventWriter, TaskStatusStore } from '@agentmesh/bus';
import { StreamTokenReply, Subjects, SubmitTaskReply, TaskListReply } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type TestGateway,
  putSharedAgents,
} from './__fixtures__/gateway-harness.js';
import { openSse } from './__fixtures__/sse-client.js';
import { CONSOLE_CSP } from './routes/console.js';
import { StreamTokens, streamTokenKey } from './stream-tokens.js';

const ACME_KEY = 'acme-key-browser-0011223344556677';
const BETA_KEY = 'beta-key-browser-8899aabbccddeeff';
const ADMIN_KEY = 'admin-key-browser-ffeeddccbbaa9988';
const PAGE = 'http://127.0.0.1:5173';

let nats: NatsServer;
let gw: TestGateway;
let plain: TestGateway;
let client: NatsConnection;

beforeAll(async () => {
  nats = await startNats();
  const keys = { API_KEYS: `${ACME_KEY}=acme,${BETA_KEY}=beta`, ADMIN_API_KEYS: ADMIN_KEY };
  gw = await startTestGateway(nats.url, { ...keys, CORS_ALLOWED_ORIGINS: `${PAGE},https://console.example` });
  await putSharedAgents(nats.url, 'w');
  plain = await startTestGateway(nats.url, keys);
  client = await connect({ servers: nats.url });
});
afterAll(async () => {
  await gw?.stop();
  await plain?.stop();
  await client?.close();
  await nats?.stop();
});

async function submit(key = ACME_KEY): Promise<SubmitTaskReply> {
  const res = await call(gw.url, 'POST', '/v1/tasks', {
    body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
    headers: bearer(key),
  });
  expect(res.status).toBe(202);
  return SubmitTaskReply.parse(res.body);
}

async function finishTask(accountId: string, traceId: string, message = 'finished'): Promise<void> {
  const js = jetstream(client);
  const events = await TaskEventWriter.open(js, await jetstreamManager(client), {
    accountId,
    traceId,
    attempt: 1,
  });
  await events.emit('message_chunk', { delta: message });
  await events.emit('done', {
    message,
    steps: 1,
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    duration_ms: 1,
  });
}

/** Every event frame of a stream opened with `?token=` and no API key. */
async function streamWithToken(traceId: string, token: string) {
  const sse = await openSse(`${gw.url}/v1/tasks/${traceId}/events?token=${encodeURIComponent(token)}`);
  const events: { event?: string; data: string }[] = [];
  if (sse.status === 200)
    for await (const frame of sse.frames) if (frame.kind === 'event') events.push(frame);
  return { status: sse.status, events };
}

describe('CORS', () => {
  it('when no origin is allowed (the default), a preflight stays 404 and answers carry no CORS header', async () => {
    const preflight = await call(plain.url, 'OPTIONS', '/v1/tasks', {
      headers: { origin: PAGE, 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(404);
    const health = await call(plain.url, 'GET', '/v1/agents', {
      headers: { origin: PAGE, ...bearer(ACME_KEY) },
    });
    expect(health.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('when an allowed origin sends a preflight, it gets 204 with the methods and headers the API takes', async () => {
    const preflight = await call(gw.url, 'OPTIONS', '/v1/tasks/abc/events', {
      headers: {
        origin: PAGE,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization, last-event-id',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe(PAGE);
    expect(preflight.headers['access-control-allow-methods']).toContain('POST');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/authorization.*last-event-id/);
    expect(preflight.headers.vary).toContain('Origin');
  });

  it('when another origin sends a preflight, it gets 403 and no Access-Control-Allow-Origin', async () => {
    const preflight = await call(gw.url, 'OPTIONS', '/v1/tasks', {
      headers: { origin: 'http://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(403);
    expect(preflight.body).toMatchObject({ code: 'FORBIDDEN' });
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('when an allowed origin calls, answers and refusals carry its origin and expose Retry-After; another origin gets none', async () => {
    const ok = await call(gw.url, 'POST', '/v1/tasks', {
      body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] },
      headers: { origin: PAGE, ...bearer(ACME_KEY) },
    });
    expect(ok.status).toBe(202);
    expect(ok.headers['access-control-allow-origin']).toBe(PAGE);
    expect(ok.headers['access-control-expose-headers']).toContain('Retry-After');
    const refused = await call(gw.url, 'GET', '/v1/tasks', { headers: { origin: PAGE } });
    expect(refused.status).toBe(401);
    expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
    const other = await call(gw.url, 'GET', '/v1/tasks', {
      headers: { origin: 'http://evil.example', ...bearer(ACME_KEY) },
    });
    expect(other.status).toBe(200);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('when an allowed origin opens an event stream, the stream (written outside Fastify) carries its origin too', async () => {
    const task = await submit();
    await finishTask('acme', task.trace_id);
    const response = await fetch(`${gw.url}${task.events_url}?token=${task.stream_token}`, {
      headers: { origin: PAGE },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(PAGE);
    await response.body?.cancel();
  });

  it('when the allow-list holds something that is not an origin, the gateway refuses to start', async () => {
    await expect(
      startTestGateway(nats.url, { CORS_ALLOWED_ORIGINS: 'http://ok.example/path' }),
    ).rejects.toThrow(/CORS_ALLOWED_ORIGINS/);
  });
});

describe('stream tokens', () => {
  it("when a browser opens a task's events with the submit reply's token and no API key, it gets every event", async () => {
    const task = await submit();
    expect(task.stream_token).toEqual(expect.any(String));
    await finishTask('acme', task.trace_id, 'hello');

    const { status, events } = await streamWithToken(task.trace_id, task.stream_token!);

    expect(status).toBe(200);
    expect(events.map((event) => event.event)).toEqual(['message_chunk', 'done']);
  });

  it('when a token is asked for with the API key, it opens the task like the one on the submit reply', async () => {
    const task = await submit();
    await finishTask('acme', task.trace_id);
    const issued = await call(gw.url, 'POST', `/v1/tasks/${task.trace_id}/stream-token`, {
      headers: bearer(ACME_KEY),
    });
    expect(issued.status).toBe(201);
    const reply = StreamTokenReply.parse(issued.body);
    expect(Date.parse(reply.expires_at) - Date.now()).toBeGreaterThan(9 * 60_000);
    const sse = await openSse(`${gw.url}${reply.events_url}`);
    expect(sse.status).toBe(200);
    sse.close();
  });

  it("when task A's token is used on task B of the same account, the answer is 403", async () => {
    const a = await submit();
    const b = await submit();
    const res = await call(gw.url, 'GET', `/v1/tasks/${b.trace_id}/events?token=${a.stream_token}`);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ code: 'FORBIDDEN' });
  });

  it("when another account asks for a token of acme's task, it is told there is no such task", async () => {
    const task = await submit();
    const res = await call(gw.url, 'POST', `/v1/tasks/${task.trace_id}/stream-token`, {
      headers: bearer(BETA_KEY),
    });
    expect(res.status).toBe(404);
  });

  it("when another account's token names the same trace id, it opens that account's task, never acme's", async () => {
    const task = await submit();
    await finishTask('acme', task.trace_id, 'acme secret answer');
    const betaToken = new StreamTokens(streamTokenKey(gw.config.CREDENTIALS_MASTER_KEY), 60_000).issue(
      'beta',
      task.trace_id,
    ).token;
    const res = await call(gw.url, 'GET', `/v1/tasks/${task.trace_id}/events?token=${betaToken}`);
    expect(res.status).toBe(404);
    expect(res.text).not.toContain('acme secret answer');
  });

  it('when the token has expired, the answer is 401 and says so', async () => {
    const task = await submit();
    const expired = new StreamTokens(
      streamTokenKey(gw.config.CREDENTIALS_MASTER_KEY),
      1_000,
      () => Date.now() - 60_000,
    ).issue('acme', task.trace_id).token;
    const res = await call(gw.url, 'GET', `/v1/tasks/${task.trace_id}/events?token=${expired}`);
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  });

  it('when the token was tampered with or signed by a gateway with another master key, the answer is 401', async () => {
    const task = await submit();
    const [payload, mac] = task.stream_token!.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const longer = Buffer.from(JSON.stringify({ ...claims, e: (claims.e as number) + 86_400 })).toString(
      'base64url',
    );
    for (const token of [`${longer}.${mac}`, `${payload}.${mac.slice(0, -2)}AA`, plainToken(task.trace_id)]) {
      const res = await call(
        gw.url,
        'GET',
        `/v1/tasks/${task.trace_id}/events?token=${encodeURIComponent(token)}`,
      );
      expect(res.status).toBe(401);
    }
  });

  it('when the token is given twice, the answer is 400, not a failure', async () => {
    const task = await submit();
    const token = encodeURIComponent(task.stream_token!);
    const res = await call(gw.url, 'GET', `/v1/tasks/${task.trace_id}/events?token=${token}&token=${token}`);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('when a token opens a stream, it is never written to a log line', async () => {
    const task = await submit();
    await finishTask('acme', task.trace_id);
    await streamWithToken(task.trace_id, task.stream_token!);
    await call(gw.url, 'GET', `/v1/tasks/${task.trace_id}/events?token=${task.stream_token}x`);
    expect(gw.logs.join('\n')).not.toContain(task.stream_token!.split('.')[1]);
  });

  it('when a task is submitted over NATS, the reply on the bus carries no token (tokens are for browsers)', async () => {
    const headers = natsHeaders();
    headers.set('x-account-id', 'acme');
    const reply = await client.request(
      Subjects.GATEWAY_SUBMIT,
      JSON.stringify({ workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] }),
      { timeout: 5_000, headers },
    );
    const body = SubmitTaskReply.parse(reply.json());
    expect(body.trace_id).toEqual(expect.any(String));
    expect(body.stream_token).toBeUndefined();
  });
});

/** A token for `traceId` signed under the other gateway's master key. */
function plainToken(traceId: string): string {
  return new StreamTokens(streamTokenKey(plain.config.CREDENTIALS_MASTER_KEY), 60_000).issue('acme', traceId)
    .token;
}

describe('task and agent lists', () => {
  it("when a caller lists tasks, it gets its account's newest first, up to the limit, and none of another account", async () => {
    const first = await submit();
    const second = await submit();
    const beta = await submit(BETA_KEY);
    const res = await call(gw.url, 'GET', '/v1/tasks?limit=2', { headers: bearer(ACME_KEY) });
    expect(res.status).toBe(200);
    const { tasks } = TaskListReply.parse(res.body);
    expect(tasks.map((task) => task.trace_id)).toEqual([second.trace_id, first.trace_id]);
    const all = await call(gw.url, 'GET', '/v1/tasks?limit=100', { headers: bearer(ACME_KEY) });
    expect(all.body.tasks.map((task: { trace_id: string }) => task.trace_id)).not.toContain(beta.trace_id);
  });

  it('when the limit is out of range or unknown parameters come, the answer is 400', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=x', 'offset=3']) {
      const res = await call(gw.url, 'GET', `/v1/tasks?${query}`, { headers: bearer(ACME_KEY) });
      expect(res.status).toBe(400);
    }
  });

  it('when a caller filters its tasks by status, agent, error code, dates and text, it gets those that match every filter, each with the start of its message, duration, tokens and cost', async () => {
    const sent = async (content: string, key = ACME_KEY) => {
      const res = await call(gw.url, 'POST', '/v1/tasks', {
        body: { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content }] },
        headers: bearer(key),
      });
      expect(res.status).toBe(202);
      return SubmitTaskReply.parse(res.body).trace_id;
    };
    const marker = `zebra${Date.now()}`;
    const done = await sent(`${marker} founded when? key sk-live-abcdefghijklmnop1234`);
    const failed = await sent(`${marker} who owns it?`);
    const other = await sent(`unrelated ${Date.now()}`);
    const betaTask = await sent(`${marker} beta's own`, BETA_KEY);
    // What executors write when the tasks end.
    const statuses = new TaskStatusStore(
      (await openMeshBuckets(jetstream(client), { only: ['tasks'] })).tasks,
    );
    await statuses.update('acme', done, (current) => ({
      ...current!,
      status: 'done',
      attempt: 1,
      duration_ms: 1_234,
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      cost_usd: 0.0021,
    }));
    await statuses.update('acme', failed, (current) => ({
      ...current!,
      status: 'error',
      attempt: 1,
      error: { code: 'LLM_ERROR', message: 'the model refused', retryable: false },
    }));
    const list = async (query: string, key = ACME_KEY) => {
      const res = await call(gw.url, 'GET', `/v1/tasks?${query}`, { headers: bearer(key) });
      expect(res.status).toBe(200);
      return TaskListReply.parse(res.body).tasks;
    };
    const ids = async (query: string, key = ACME_KEY) =>
      (await list(query, key)).map((task) => task.trace_id);

    expect(await ids(`q=${marker}`)).toEqual([failed, done]);
    expect(await ids(`q=${marker.toUpperCase()}&status=done`)).toEqual([done]);
    expect(await ids(`q=${marker}&error_code=LLM_ERROR`)).toEqual([failed]);
    expect(await ids(`q=refused`)).toContain(failed);
    expect(await ids(`q=${done}`)).toEqual([done]);
    expect(await ids(`status=error&workflow_id=w&limit=100`)).toContain(failed);
    expect(await ids(`status=error&limit=100`)).not.toContain(done);
    expect(await ids(`workflow_id=nope&q=${marker}`)).toEqual([]);
    const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
    const inAnHour = new Date(Date.now() + 3_600_000).toISOString();
    expect(
      await ids(`q=${marker}&since=${encodeURIComponent(hourAgo)}&until=${encodeURIComponent(inAnHour)}`),
    ).toEqual([failed, done]);
    expect(await ids(`q=${marker}&since=${encodeURIComponent(inAnHour)}`)).toEqual([]);
    expect(await ids(`q=${marker}&until=${encodeURIComponent(hourAgo)}`)).toEqual([]);
    expect(await ids(`q=unrelated`)).toContain(other);
    // Another account's task is not found by any filter, its trace id included.
    expect(await ids(`q=${betaTask}`)).toEqual([]);
    expect(await ids(`q=${marker}`, BETA_KEY)).toEqual([betaTask]);

    const [row] = await list(`q=${marker}&status=done`);
    expect(row).toMatchObject({
      preview: expect.stringContaining(`${marker} founded when?`),
      duration_ms: 1_234,
      usage: { total_tokens: 15 },
      cost_usd: 0.0021,
    });
    // The preview is masked of what looks like a credential.
    expect(row?.preview).not.toContain('sk-live-abcdefghijklmnop1234');
    expect(row?.preview).toContain('[redacted]');
  });

  it('when a filter is malformed, the answer is 400 naming it', async () => {
    for (const query of [
      'status=finished',
      'error_code=NOT_A_CODE',
      'since=yesterday',
      'until=2026-13-01T00:00:00Z',
      'since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z',
      'workflow_id=bad%20name',
      `q=${'x'.repeat(201)}`,
      'q=',
      'status=done&status=error',
    ]) {
      const res = await call(gw.url, 'GET', `/v1/tasks?${query}`, { headers: bearer(ACME_KEY) });
      expect(res.status, query).toBe(400);
      expect(res.body.code).toBe('INVALID_REQUEST');
    }
  });

  it("when a caller lists agents, it sees its account's and the shared ones by id, name and description, never their prompts", async () => {
    const admin = { ...bearer(ADMIN_KEY), 'x-account-id': 'acme' };
    const agent = {
      workflow_id: 'console_helper',
      name: 'Helper',
      description: 'helps',
      system_prompt: 'SYSTEM-PROMPT-CANARY',
      model: { model_name: 'm', base_url: 'http://127.0.0.1:1/v1' },
    };
    expect(
      (await call(gw.url, 'PUT', '/v1/admin/agents/console_helper', { body: agent, headers: admin })).status,
    ).toBe(201);
    const acme = await call(gw.url, 'GET', '/v1/agents', { headers: bearer(ACME_KEY) });
    expect(acme.status).toBe(200);
    expect(acme.body.agents).toContainEqual({
      workflow_id: 'console_helper',
      name: 'Helper',
      description: 'helps',
      version: 1,
    });
    expect(acme.text).not.toContain('SYSTEM-PROMPT-CANARY');
    const beta = await call(gw.url, 'GET', '/v1/agents', { headers: bearer(BETA_KEY) });
    expect(beta.body.agents).not.toContainEqual(expect.objectContaining({ workflow_id: 'console_helper' }));
  });
});

describe('the caller', () => {
  it('GET /v1/caller says what kind of key was presented and for which account, so the console knows whether to offer accounts', async () => {
    const account = await call(gw.url, 'GET', '/v1/caller', { headers: bearer(ACME_KEY) });
    const admin = await call(gw.url, 'GET', '/v1/caller', { headers: bearer(ADMIN_KEY) });
    const adminFor = await call(gw.url, 'GET', '/v1/caller', {
      headers: { ...bearer(ADMIN_KEY), 'x-account-id': 'beta' },
    });
    const nobody = await call(gw.url, 'GET', '/v1/caller', { headers: bearer('no-such-key-0123456789') });

    expect(account).toMatchObject({ status: 200, body: { kind: 'api_key', account_id: 'acme' } });
    expect(admin).toMatchObject({ status: 200, body: { kind: 'admin' } });
    expect(admin.body.account_id).toBeUndefined();
    expect(adminFor.body).toEqual({ kind: 'admin', account_id: 'beta' });
    expect(nobody.status).toBe(401);
    expect(nobody.body.code).toBe('UNAUTHORIZED');
  });
});

describe('web console', () => {
  it('when a browser asks for /console, it is sent to the page, served with a CSP that allows no inline script', async () => {
    const redirect = await fetch(`${gw.url}/console`, { redirect: 'manual' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/console/');
    const page = await call(gw.url, 'GET', '/console/');
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toContain('text/html');
    expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    expect(page.text).toContain('<script type="module" src="/console/console.js"></script>');
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it('when the scripts are asked for, they come as JavaScript; a file that is not part of the console is 404', async () => {
    for (const file of [
      'console.js',
      'task-view.js',
      'answer-text.js',
      'schedules-view.js',
      'versions-view.js',
      'task-list.js',
      'task-waterfall.js',
      'threads-view.js',
    ]) {
      const script = await call(gw.url, 'GET', `/console/${file}`);
      expect(script.status).toBe(200);
      expect(script.headers['content-type']).toContain('text/javascript');
    }
    expect((await call(gw.url, 'GET', '/console/..%2Fpackage.json')).status).toBe(404);
    expect((await call(gw.url, 'GET', '/console/secret.txt')).status).toBe(404);
  });

  it('when CONSOLE_ENABLED is false, /console is not served', async () => {
    const off = await startTestGateway(nats.url, { CONSOLE_ENABLED: 'false' });
    try {
      expect((await call(off.url, 'GET', '/console/')).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});
