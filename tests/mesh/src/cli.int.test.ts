/**
 * Issue 13, the `agentmesh` CLI as a user runs it: the built binary as a child process against the
 * whole mesh (gateway, assembler, executor as processes on real NATS, a scripted model, a recording
 * API standing in for a third-party service). Configuration from the environment, one-line errors,
 * a management round trip, an OpenAPI document imported from a URL and a task that calls it, `tail`,
 * and following a task over NATS (JetStream) without losing the events of a task that already ended;
 * listing, denying and approving the tool calls of a parked task.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MeshClient } from '@agentmesh/client';
import { followTaskEventsOverNats } from '@agentmesh/client/nats';
import { openMeshBuckets, ParkedTaskStore, TaskStatusStore } from '@agentmesh/bus';
import {
  newTraceId,
  RESUMED_PARK_HEADER,
  Streams,
  taskAssembledSubject,
  TaskStatus,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  findFreePort,
  parkedTaskFixture,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, sseEvents } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const CLI_ENTRY = fileURLToPath(new URL('../../../libs/client/dist/cli/main.js', import.meta.url));
const ANSWER = 'It is sunny in Lisbon.';
const WEATHER_KEY = 'canary-weather-key-4b1e';

/** A one-operation OpenAPI document: GET /weather/{city}, an API key in a header. */
const WEATHER_API = {
  openapi: '3.0.3',
  info: { title: 'weather', version: '1' },
  servers: [{ url: 'https://weather.invalid' }],
  components: { securitySchemes: { weather_key: { type: 'apiKey', in: 'header', name: 'x-weather-key' } } },
  security: [{ weather_key: [] }],
  paths: {
    '/weather/{city}': {
      get: {
        operationId: 'getWeather',
        summary: "A city's weather today",
        parameters: [{ name: 'city', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': { description: 'the weather' } },
      },
    },
  },
};

let mesh: Mesh;
let model: ScriptedModel;
let weather: RecordingApi;
let client: MeshClient;
let dir: string;
/** The environment of a CLI run as the admin managing account acme. */
let adminEnv: Record<string, string>;

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: ANSWER }) });
  weather = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/openapi.json', reply: { body: WEATHER_API } },
      { method: 'GET', path: '/weather/:city', reply: { body: { city: 'Lisbon', sky: 'sunny' } } },
    ],
  });
  mesh = await startMesh({ executors: 1 });
  // In the shared catalogue: every account's tasks may run it.
  await admin(mesh, 'PUT', '/agents/plain_agent', {
    workflow_id: 'plain_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl },
  });
  client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
  dir = await mkdtemp(join(tmpdir(), 'agentmesh-cli-mesh-'));
  adminEnv = { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.adminKey };
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await weather?.stop();
});

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a child process to its exit, with only `env` (and PATH) as its environment. */
async function agentmesh(args: string[], env: Record<string, string>, stdin?: string): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(stdin ?? '');
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

async function jsonFile(name: string, value: unknown): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, JSON.stringify(value));
  return file;
}

const STACK_FRAME = /\n\s+at /;

describe('agentmesh configuration', () => {
  it('AGENTMESH_URL and AGENTMESH_API_KEY from the environment reach the gateway; --url overrides the environment', async () => {
    const fromEnv = await agentmesh(['agents', 'list', '--json'], adminEnv);
    const overridden = await agentmesh(['--url', mesh.gatewayUrl, 'agents', 'list', '--json'], {
      ...adminEnv,
      AGENTMESH_URL: 'http://127.0.0.1:9',
    });

    expect(fromEnv, fromEnv.stderr).toMatchObject({ code: 0 });
    expect(JSON.parse(fromEnv.stdout)).toEqual(expect.any(Array));
    expect(overridden.code, overridden.stderr).toBe(0);
  });

  it('a missing key, an unreachable gateway and a refusal are one error line each (plus a hint), never a stack trace', async () => {
    const noKey = await agentmesh(['status', 'ab'.repeat(16)], { AGENTMESH_URL: mesh.gatewayUrl });
    const nowhere = `http://127.0.0.1:${await findFreePort()}`;
    const unreachable = await agentmesh(['status', 'ab'.repeat(16)], {
      AGENTMESH_URL: nowhere,
      AGENTMESH_API_KEY: mesh.apiKey,
    });
    const notAdmin = await agentmesh(['agents', 'list'], {
      AGENTMESH_URL: mesh.gatewayUrl,
      AGENTMESH_API_KEY: mesh.apiKey,
    });

    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/^error UNAUTHORIZED: .+\nhint: no API key given: set AGENTMESH_API_KEY/);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(
      new RegExp(
        `^error SERVICE_UNAVAILABLE: cannot reach the gateway at ${nowhere}.*\\nhint: .*AGENTMESH_URL`,
      ),
    );
    expect(notAdmin.code).toBe(1);
    expect(notAdmin.stderr).toMatch(/^error FORBIDDEN: /);
    for (const run of [noKey, unreachable, notAdmin]) {
      expect(run.stdout).toBe('');
      expect(run.stderr).not.toMatch(STACK_FRAME);
      expect(run.stderr).not.toContain(mesh.apiKey);
    }
  });
});

describe('agentmesh management commands', () => {
  it('an agent put from a file reads back the same, is listed, and is gone after delete', async () => {
    const agent = {
      workflow_id: 'cli_round_trip',
      system_prompt: 'Be brief.',
      model: { model_name: 'scripted', base_url: model.baseUrl },
    };
    const env = adminEnv;
    const put = await agentmesh(
      ['--account', MESH_ACCOUNT, 'agents', 'put', await jsonFile('agent.json', agent)],
      env,
    );
    const got = await agentmesh(['--account', MESH_ACCOUNT, 'agents', 'get', 'cli_round_trip'], env);
    const listed = await agentmesh(['--account', MESH_ACCOUNT, 'agents', 'list'], env);
    const deleted = await agentmesh(['--account', MESH_ACCOUNT, 'agents', 'delete', 'cli_round_trip'], env);
    const gone = await agentmesh(
      ['--account', MESH_ACCOUNT, 'agents', 'get', 'cli_round_trip', '--json'],
      env,
    );

    expect(put).toMatchObject({ code: 0, stdout: 'stored agent cli_round_trip\n' });
    expect(JSON.parse(got.stdout)).toMatchObject({ ...agent, scope: 'account' });
    expect(listed.stdout).toMatch(/^cli_round_trip\taccount\tscripted$/m);
    expect(deleted).toMatchObject({ code: 0, stdout: 'deleted agent cli_round_trip\n' });
    expect(gone.code).toBe(1);
    expect(JSON.parse(gone.stderr)).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('a credential is stored from stdin, listed by name only, and its value is in no output and no log line', async () => {
    const secret = 'canary-credential-value-31c9';
    const scope = ['--account', MESH_ACCOUNT];
    const put = await agentmesh(
      [...scope, 'credentials', 'put', 'CLI_SECRET', '--user', 'u9'],
      adminEnv,
      secret,
    );
    const listed = await agentmesh([...scope, 'credentials', 'list', '--user', 'u9'], adminEnv);
    const deleted = await agentmesh(
      [...scope, 'credentials', 'delete', 'CLI_SECRET', '--user', 'u9'],
      adminEnv,
    );
    const after = await agentmesh([...scope, 'credentials', 'list', '--user', 'u9', '--json'], adminEnv);

    expect(put.code, put.stderr).toBe(0);
    expect(listed).toMatchObject({ code: 0, stdout: 'CLI_SECRET\n' });
    expect(deleted.code).toBe(0);
    expect(JSON.parse(after.stdout)).toEqual([]);
    for (const run of [put, listed, deleted, after]) expect(run.stdout + run.stderr).not.toContain(secret);
    expect(JSON.stringify(mesh.logs())).not.toContain(secret);
  });

  it("without --user, credentials put, list and delete act on the account-wide set, apart from any user's; the value is in no output", async () => {
    const secret = 'canary-account-credential-value-8a02';
    const scope = ['--account', MESH_ACCOUNT];
    const put = await agentmesh([...scope, 'credentials', 'put', 'CLI_SHARED'], adminEnv, secret);
    const listed = await agentmesh([...scope, 'credentials', 'list'], adminEnv);
    const ofUser = await agentmesh([...scope, 'credentials', 'list', '--user', 'u9', '--json'], adminEnv);
    const deleted = await agentmesh([...scope, 'credentials', 'delete', 'CLI_SHARED'], adminEnv);
    const again = await agentmesh([...scope, 'credentials', 'delete', 'CLI_SHARED', '--json'], adminEnv);

    expect(put).toMatchObject({
      code: 0,
      stdout: `stored credential CLI_SHARED for every user of account ${MESH_ACCOUNT} (account-wide)\n`,
    });
    expect(listed).toMatchObject({ code: 0, stdout: expect.stringMatching(/^CLI_SHARED$/m) });
    expect(JSON.parse(ofUser.stdout)).not.toContain('CLI_SHARED');
    expect(deleted.code).toBe(0);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stderr)).toMatchObject({ code: 'NOT_FOUND' });
    for (const run of [put, listed, deleted]) expect(run.stdout + run.stderr).not.toContain(secret);
    expect(JSON.stringify(mesh.logs())).not.toContain(secret);
  });

  it('an API key made with keys create runs tasks of its account, and after keys revoke it is refused', async () => {
    const created = await agentmesh(
      ['--account', MESH_ACCOUNT, 'keys', 'create', '--label', 'cli test'],
      adminEnv,
    );
    const key = created.stdout.trim();
    const asKey = { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: key };
    const before = await agentmesh(['status', 'ab'.repeat(16)], asKey);
    const revoked = await agentmesh(['--account', MESH_ACCOUNT, 'keys', 'revoke'], adminEnv, `${key}\n`);
    const after = await agentmesh(['status', 'ab'.repeat(16)], asKey);

    expect(created.code, created.stderr).toBe(0);
    expect(key).toMatch(/^am_\S{20,}$/);
    // Known to the gateway: the task is not found, the key is not refused.
    expect(before.stderr).toMatch(/^error NOT_FOUND: /);
    expect(revoked).toMatchObject({ code: 0, stdout: 'revoked\n' });
    expect(after.stderr).toMatch(/^error UNAUTHORIZED: /);
  });
});

describe('an OpenAPI document imported with the CLI', () => {
  it('imported from a URL, bound to an agent and run with submit --follow: the agent calls the API with the stored credential', async () => {
    const scope = ['--account', MESH_ACCOUNT];
    const imported = await agentmesh(
      [
        ...scope,
        'tools',
        'import',
        `${weather.url}/openapi.json`,
        '--base-url',
        weather.url,
        '--name-prefix',
        'wx_',
        '--json',
      ],
      adminEnv,
    );
    expect(imported.code, imported.stderr).toBe(0);
    const report = JSON.parse(imported.stdout) as { imported: { name: string }[]; credentials: string[] };
    expect(report.imported).toHaveLength(1);
    const tool = report.imported[0]!.name;
    expect(report.credentials).toHaveLength(1);
    const credential = report.credentials[0]!;

    const stored = await agentmesh(
      [...scope, 'credentials', 'put', credential, '--user', 'cli-user'],
      adminEnv,
      WEATHER_KEY,
    );
    const agent = await agentmesh(
      [
        ...scope,
        'agents',
        'put',
        await jsonFile('weather-agent.json', {
          workflow_id: 'weather_agent',
          model: { model_name: 'scripted', base_url: model.baseUrl },
          tools: [tool],
        }),
      ],
      adminEnv,
    );
    const shown = await agentmesh([...scope, 'tools', 'get', tool], adminEnv);
    expect([stored.code, agent.code, shown.code]).toEqual([0, 0, 0]);
    expect(JSON.parse(shown.stdout)).toMatchObject({ name: tool, type: 'HTTP', scope: 'account' });

    model.enqueue({ toolCalls: [{ name: tool, arguments: { city: 'Lisbon' } }] });
    const run = await agentmesh(
      [
        'submit',
        '--workflow',
        'weather_agent',
        '--message',
        'Weather in Lisbon?',
        '--user',
        'cli-user',
        '--follow',
      ],
      { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.apiKey },
    );

    expect(run, run.stderr).toMatchObject({ code: 0, stdout: `${ANSWER}\n` });
    expect(run.stderr).toContain(`[tool] ${tool} {"city":"Lisbon"}`);
    expect(run.stderr).toMatch(new RegExp(`\\[tool\\] ${tool} ok \\(\\d+ ms\\)`));
    const call = weather.requests.find((request) => request.path === '/weather/Lisbon');
    expect(call?.headers['x-weather-key']).toBe(WEATHER_KEY);
    expect(run.stdout + run.stderr).not.toContain(WEATHER_KEY);
  });
});

describe('agentmesh tail', () => {
  it("prints every event of the account's tasks as they happen, one line each naming its task, until Ctrl-C", async () => {
    const child = spawn(process.execPath, [CLI_ENTRY, 'tail'], {
      env: { PATH: process.env.PATH ?? '', AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    const closed = once(child, 'close');
    try {
      // Printed once the gateway answered: every event stored from then on is followed.
      await waitFor(() => stderr.includes("following the account's events"), { timeoutMs: 15_000 });
      const tasks = await Promise.all(
        [1, 2].map(() =>
          client.submit({
            workflow_id: 'plain_agent',
            user_id: 'u1',
            messages: [{ role: 'user', content: 'hi' }],
          }),
        ),
      );
      const doneLine = (traceId: string): RegExp => new RegExp(`^${traceId} \\d+ done `, 'm');
      await waitFor(() => tasks.every((task) => doneLine(task.trace_id).test(stdout)), {
        timeoutMs: 30_000,
        description: 'both tasks ending in the tail',
      });
      for (const task of tasks) {
        const replayed = await sseEvents(mesh, task.trace_id);
        const tailed = stdout
          .split('\n')
          .filter((line) => line.startsWith(`${task.trace_id} `))
          .map((line) => line.split(' ').slice(1, 3).join(' '));
        expect(tailed).toEqual(replayed.map((event) => `${event.seq} ${event.type}`));
      }
    } finally {
      child.kill('SIGINT');
    }
    const [code] = (await closed) as [number | null];
    expect(code).toBe(130);
    expect(stderr).not.toMatch(STACK_FRAME);
  });
});

describe('following a task over NATS', () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect({ servers: mesh.nats.url });
  });
  afterAll(async () => {
    await nc?.close();
  });

  it('a task that finished before the follower attached yields all its events, in order, once: exactly what SSE replays', async () => {
    const reply = await client.submit({
      workflow_id: 'plain_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'finish before anyone listens' }],
    });
    await waitFor(async () => (await client.status(reply.trace_id)).status === 'done', { timeoutMs: 30_000 });

    const followed: TaskEvent[] = [];
    for await (const event of followTaskEventsOverNats(nc, { eventsSubject: reply.events_subject })) {
      followed.push(event);
    }

    expect(followed).toEqual(await sseEvents(mesh, reply.trace_id));
    expect(followed.map((event) => event.seq)).toEqual(followed.map((_event, index) => index + 1));
    expect(followed.at(-1)?.type).toBe('done');
  });

  it('submit --follow --nats prints the answer from the events read on JetStream and exits 0', async () => {
    const run = await agentmesh(
      [
        'submit',
        '--workflow',
        'plain_agent',
        '--message',
        'over NATS',
        '--follow',
        '--nats',
        mesh.nats.url,
        '--json',
      ],
      { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.apiKey },
    );

    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as TaskEvent);
    expect(events).toEqual(await sseEvents(mesh, events[0]!.trace_id));
    expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: ANSWER } });
  });
});

describe('agentmesh approvals, approve and deny', () => {
  it('lists the call a parked task waits on, denies it with a comment (the task is queued again once), and a later approve is one CONFLICT line', async () => {
    const traceId = newTraceId();
    // Queued again on a native class no executor here provides, so the copy stays in MESH_TASKS to be counted.
    const subject = taskAssembledSubject(MESH_ACCOUNT, ['approval_cli_check']);
    const nc = await connect({ servers: mesh.nats.url });
    try {
      const js = jetstream(nc);
      const jsm = await jetstreamManager(nc);
      const buckets = await openMeshBuckets(js, { only: ['tasks', 'parkedTasks'] });
      const parked = new ParkedTaskStore(buckets.parkedTasks);
      await parked.park(
        parkedTaskFixture({ traceId, accountId: MESH_ACCOUNT, callIds: ['call_1'], subject }),
      );
      const now = new Date().toISOString();
      await new TaskStatusStore(buckets.tasks).create({
        trace_id: traceId,
        account_id: MESH_ACCOUNT,
        workflow_id: 'payments',
        status: TaskStatus.WAITING_APPROVAL,
        attempt: 1,
        submitted_at: now,
        updated_at: now,
      });
      const env = { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.apiKey };

      const listed = await agentmesh(['approvals', traceId], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(/^call_1 pending pay_invoice: amount above 1000 \(expires .+\)\n/);
      expect(listed.stdout).toContain(`task ${traceId} still waits on 1 approval`);

      const denied = await agentmesh(['deny', traceId, 'call_1', '--comment', 'not this month'], env);
      expect(denied.code, denied.stderr).toBe(0);
      expect(denied.stdout).toBe(`call_1 denied\ntask ${traceId} is queued to go on\n`);
      const stored = await parked.get(MESH_ACCOUNT, traceId);
      expect(stored?.parked.approvals[0]).toMatchObject({ state: 'denied', comment: 'not this month' });
      const info = await jsm.streams.info(Streams.TASKS.name, { subjects_filter: subject });
      expect(info.state.subjects?.[subject]).toBe(1);
      const queued = await jsm.streams.getMessage(Streams.TASKS.name, { last_by_subj: subject });
      expect(queued?.header.get(RESUMED_PARK_HEADER)).toBe('1');

      const late = await agentmesh(['approve', traceId, 'call_1'], env);
      expect(late.code).toBe(1);
      expect(late.stderr).toBe(
        'error CONFLICT: the approval of call call_1 is denied already\ndetail: {"call_id":"call_1","state":"denied"}\n',
      );
      expect(late.stderr).not.toMatch(STACK_FRAME);
    } finally {
      await nc.close();
    }
  });
});
