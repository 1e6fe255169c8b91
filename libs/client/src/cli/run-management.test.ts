import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  closedPort,
  sendJson,
  startStandInGateway,
  type StandInGateway,
} from '../__fixtures__/stand-in-gateway.js';
import { DEFAULT_GATEWAY_URL, parseCliArgs, USAGE } from './cli-args.js';
import { ExitCode, runCli } from './run-cli.js';

const ADMIN_KEY = 'am_admin_canary_key_5521';
const SECRET = 'credential-canary-value-9e1d';
const AGENT = { workflow_id: 'cli_agent', model: { model_name: 'm', base_url: 'http://127.0.0.1:9' } };

let gateway: StandInGateway;
let dir: string;

beforeEach(async () => {
  gateway = await startStandInGateway();
  dir = await mkdtemp(join(tmpdir(), 'agentmesh-cli-'));
});
afterEach(async () => {
  await gateway.stop();
});

async function cli(
  argv: string[],
  options: { env?: { url?: string; apiKey?: string }; stdin?: string } = {},
) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: options.env ?? { url: gateway.url, apiKey: ADMIN_KEY },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    ...(options.stdin === undefined ? {} : { stdin: Readable.from([options.stdin]) }),
  });
  return { code, stdout, stderr };
}

describe('agentmesh configuration and errors', () => {
  it('without --url or AGENTMESH_URL it talks to npm start’s gateway, http://127.0.0.1:8080', () => {
    const command = parseCliArgs(['status', 'x'], {});
    expect(DEFAULT_GATEWAY_URL).toBe('http://127.0.0.1:8080');
    expect(command).toMatchObject({ connection: { url: DEFAULT_GATEWAY_URL } });
    expect(parseCliArgs(['tail'], { url: 'http://127.0.0.1:9999', apiKey: 'k' })).toMatchObject({
      connection: { url: 'http://127.0.0.1:9999', apiKey: 'k' },
    });
  });

  it('when the gateway cannot be reached, it prints one error line and a hint naming AGENTMESH_URL, no stack trace, and exits 1', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;

    const { code, stdout, stderr } = await cli(['agents', 'list'], { env: { url, apiKey: ADMIN_KEY } });

    expect(code).toBe(ExitCode.FAILED);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^error SERVICE_UNAVAILABLE: cannot reach the gateway at ${url}`));
    expect(lines[1]).toContain('AGENTMESH_URL');
    expect(stderr).not.toContain('    at ');
  });

  it.each([
    ['AGENTMESH_URL', (url: string) => ({ args: [], env: { url } }), 'came from AGENTMESH_URL'],
    ['--url', (url: string) => ({ args: ['--url', url], env: {} }), 'came from --url'],
  ])(
    'when the gateway given by %s cannot be reached, the hint names that URL (path included), never another port',
    async (_source, given, origin) => {
      const url = `http://127.0.0.1:${await closedPort()}/mesh`;
      const { args, env } = given(url);

      const { stderr } = await cli(['agents', 'list', ...args], { env: { ...env, apiKey: ADMIN_KEY } });

      const hint = stderr.trimEnd().split('\n')[1]!;
      expect(hint).toContain(`is the gateway running at ${url}?`);
      expect(hint).toContain(origin);
      expect(hint).not.toContain('8080');
    },
  );

  it('when neither --url nor AGENTMESH_URL is given, the connection records that the default was used (the hint says so)', () => {
    const command = parseCliArgs(['status', 'x'], {});
    expect(command).toMatchObject({ connection: { url: DEFAULT_GATEWAY_URL, urlSource: 'default' } });
  });

  it('when no API key is set and the gateway answers 401, it says to set AGENTMESH_API_KEY', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 401, { code: 'UNAUTHORIZED', message: 'missing API key' }),
    );

    const { code, stderr } = await cli(['tools', 'list'], { env: { url: gateway.url } });

    expect(code).toBe(ExitCode.FAILED);
    expect(stderr).toBe(
      'error UNAUTHORIZED: missing API key\nhint: no API key given: set AGENTMESH_API_KEY (or pass --api-key)\n',
    );
    expect(gateway.requests[0]!.headers.authorization).toBeUndefined();
  });

  it.each([
    ['a group without an action', ['agents']],
    ['an unknown action', ['agents', 'launch']],
    ['agents get without its workflow id', ['agents', 'get']],
    ['credentials without --account', ['credentials', 'list', '--user', 'u1']],
    ['credentials put without its name', ['--account', 'acme', 'credentials', 'put']],
    ['keys create without --account', ['keys', 'create']],
  ])('when given %s, it exits 2 with the usage text and sends nothing', async (_case, argv) => {
    const { code, stderr } = await cli(argv);

    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toContain(USAGE);
    expect(gateway.requests).toHaveLength(0);
  });
});

describe('agentmesh management commands', () => {
  it('agents put <file> PUTs the definition under its workflow id, and --json prints the stored agent', async () => {
    const file = join(dir, 'agent.json');
    await writeFile(file, JSON.stringify(AGENT));
    gateway.handle((request, response) => sendJson(response, 201, JSON.parse(request.body)));

    const { code, stdout } = await cli(['agents', 'put', file, '--json']);

    expect(code).toBe(ExitCode.OK);
    expect(gateway.requests[0]).toMatchObject({ method: 'PUT', path: '/v1/admin/agents/cli_agent' });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual(AGENT);
    expect(JSON.parse(stdout)).toMatchObject({ workflow_id: 'cli_agent', max_steps: expect.any(Number) });
  });

  it('a definition file that is not JSON is one clear line and nothing is sent', async () => {
    const file = join(dir, 'broken.json');
    await writeFile(file, '{ not json');

    const missing = await cli(['tools', 'put', join(dir, 'absent.json')]);
    const broken = await cli(['tools', 'put', file]);

    expect(missing).toMatchObject({
      code: ExitCode.FAILED,
      stderr: expect.stringMatching(/^agentmesh: cannot read .*absent\.json \(ENOENT\)\n$/),
    });
    expect(broken.code).toBe(ExitCode.FAILED);
    expect(broken.stderr).toMatch(/^agentmesh: .*broken\.json is not JSON/);
    expect(gateway.requests).toHaveLength(0);
  });

  it('credentials put reads the value from stdin, sends it only in the body, and never prints it', async () => {
    gateway.handle((_request, response) => void response.writeHead(204).end());

    const { code, stdout, stderr } = await cli(
      ['--account', 'acme', 'credentials', 'put', 'QCC_KEY', '--user', 'u1'],
      { stdin: `${SECRET}\n` },
    );

    expect(code).toBe(ExitCode.OK);
    expect(gateway.requests[0]).toMatchObject({
      method: 'PUT',
      path: '/v1/admin/accounts/acme/users/u1/credentials/QCC_KEY',
    });
    expect(gateway.requests[0]!.headers['x-account-id']).toBe('acme');
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ value: SECRET });
    expect(stdout + stderr).not.toContain(SECRET);
  });

  it('credentials without --user act on the account-wide set: put (value from stdin, never printed), list and delete', async () => {
    gateway.handle((request, response) =>
      request.method === 'GET'
        ? sendJson(response, 200, { names: ['MODEL_KEY'] })
        : void response.writeHead(204).end(),
    );

    const put = await cli(['--account', 'acme', 'credentials', 'put', 'MODEL_KEY'], { stdin: `${SECRET}\n` });
    const listed = await cli(['--account', 'acme', 'credentials', 'list']);
    const deleted = await cli(['--account', 'acme', 'credentials', 'delete', 'MODEL_KEY']);

    expect([put.code, listed.code, deleted.code]).toEqual([ExitCode.OK, ExitCode.OK, ExitCode.OK]);
    expect(gateway.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'PUT /v1/admin/accounts/acme/credentials/MODEL_KEY',
      'GET /v1/admin/accounts/acme/credentials',
      'DELETE /v1/admin/accounts/acme/credentials/MODEL_KEY',
    ]);
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ value: SECRET });
    expect(put.stdout).toBe('stored credential MODEL_KEY for every user of account acme (account-wide)\n');
    expect(listed.stdout).toBe('MODEL_KEY\n');
    expect(deleted.stdout).toContain('account-wide');
    expect(put.stdout + put.stderr).not.toContain(SECRET);
  });

  it("credentials list and delete with --user act on that user's own set", async () => {
    gateway.handle((request, response) =>
      request.method === 'GET'
        ? sendJson(response, 200, { names: ['OWN_KEY'] })
        : void response.writeHead(204).end(),
    );

    const listed = await cli(['--account', 'acme', 'credentials', 'list', '--user', 'u1']);
    const deleted = await cli(['--account', 'acme', 'credentials', 'delete', 'OWN_KEY', '--user', 'u1']);

    expect(listed).toMatchObject({ code: ExitCode.OK, stdout: 'OWN_KEY\n' });
    expect(deleted).toMatchObject({
      code: ExitCode.OK,
      stdout: 'deleted credential OWN_KEY of user u1 of account acme\n',
    });
    expect(gateway.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /v1/admin/accounts/acme/users/u1/credentials',
      'DELETE /v1/admin/accounts/acme/users/u1/credentials/OWN_KEY',
    ]);
  });

  it('keys create prints the generated key alone on stdout, and keys revoke reads the key from stdin', async () => {
    const generated = 'am_generated_key_0123456789abcdef';
    gateway.handle((request, response) =>
      request.path.endsWith('/revoke')
        ? void response.writeHead(204).end()
        : sendJson(response, 201, { account_id: 'acme', account_type: 'user', api_key: generated }),
    );

    const created = await cli(['--account', 'acme', 'keys', 'create', '--label', 'ci']);
    const revoked = await cli(['--account', 'acme', 'keys', 'revoke'], { stdin: generated });

    expect(created).toMatchObject({ code: ExitCode.OK, stdout: `${generated}\n` });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ account_id: 'acme', label: 'ci' });
    expect(revoked.code).toBe(ExitCode.OK);
    expect(JSON.parse(gateway.requests[1]!.body)).toEqual({ api_key: generated });
  });

  it('dead-letters list prints one line per letter, redrive prints only the new trace id on stdout, and a refused redrive is one error line', async () => {
    const dead = 'a'.repeat(32);
    const fresh = 'b'.repeat(32);
    const letter = {
      trace_id: dead,
      account_id: 'acme',
      workflow_id: 'weather',
      user_id: 'u1',
      reason: { code: 'MAX_DELIVER_EXCEEDED', message: 'delivered 4 times' },
      attempts: 4,
      dead_at: '2026-01-01T00:00:00.000Z',
      source: 'executor',
      input_summary: { message_count: 1, variable_names: [] },
    };
    let redrives = 0;
    gateway.handle((request, response) => {
      if (request.path.endsWith('/redrive')) {
        return (redrives += 1) === 1
          ? sendJson(response, 202, {
              trace_id: fresh,
              events_subject: `mesh.events.acme.${fresh}`,
              events_url: `/v1/tasks/${fresh}/events`,
              redriven_from: dead,
            })
          : sendJson(response, 409, { code: 'CONFLICT', message: `task ${dead} was re-driven already` });
      }
      return sendJson(response, 200, { dead_letters: [letter] });
    });

    const listed = await cli([
      '--account',
      'acme',
      'dead-letters',
      'list',
      '--workflow',
      'weather',
      '--limit',
      '5',
    ]);
    const redriven = await cli(['--account', 'acme', 'dead-letters', 'redrive', dead]);
    const again = await cli(['--account', 'acme', 'dead-letters', 'redrive', dead]);

    expect(gateway.requests[0]).toMatchObject({
      method: 'GET',
      path: '/v1/admin/dead-letters?workflow_id=weather&limit=5',
    });
    expect(listed).toMatchObject({
      code: ExitCode.OK,
      stdout: `${dead}\tacme\tweather\t2026-01-01T00:00:00.000Z\tMAX_DELIVER_EXCEEDED after 4 deliveries\n`,
    });
    expect(gateway.requests[1]).toMatchObject({
      method: 'POST',
      path: `/v1/admin/dead-letters/${dead}/redrive`,
    });
    expect(redriven).toMatchObject({ code: ExitCode.OK, stdout: `${fresh}\n` });
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toContain('CONFLICT');
  });

  it('schedules create sends the body built from its options, list prints one line each, run prints only the trace id, and a bad cron is one error line', async () => {
    const id = 'sch_0123456789abcdef0123';
    const trace = 'c'.repeat(32);
    const stored = {
      schedule_id: id,
      account_id: 'acme',
      cron: '0 8 * * 1-5',
      timezone: 'Europe/Berlin',
      workflow_id: 'report@3',
      input: { user_id: 'u1', messages: [{ role: 'user', content: 'the report' }] },
      thread_id: 'th_reports',
      paused: false,
      missed_policy: 'run_once',
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      active_since: '2026-01-01T00:00:00.000Z',
      next_fire_at: '2026-01-01T07:00:00.000Z',
    };
    gateway.handle((request, response) => {
      if (request.method === 'POST' && request.path === '/v1/schedules') {
        return JSON.parse(request.body).cron === 'bad'
          ? sendJson(response, 400, { code: 'INVALID_REQUEST', message: 'cron: invalid' })
          : sendJson(response, 201, stored);
      }
      if (request.path.endsWith('/run')) {
        return sendJson(response, 202, {
          schedule_id: id,
          fire_at: '2026-01-01T00:00:00.000Z',
          trace_id: trace,
          events_url: `/v1/tasks/${trace}/events`,
          duplicate: false,
        });
      }
      return sendJson(response, 200, { schedules: [stored] });
    });
    const options = ['--agent', 'report@3', '--user', 'u1', '--message', 'the report'];

    const created = await cli([
      'schedules',
      'create',
      '--cron',
      '0 8 * * 1-5',
      '--tz',
      'Europe/Berlin',
      '--missed',
      'run_once',
      '--thread',
      'th_reports',
      ...options,
    ]);
    const listed = await cli(['schedules', 'list']);
    const ran = await cli(['schedules', 'run', id, '--idempotency-key', 'k-1']);
    const refused = await cli(['schedules', 'create', '--cron', 'bad', ...options]);

    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({
      workflow_id: 'report@3',
      input: { user_id: 'u1', messages: [{ role: 'user', content: 'the report' }] },
      cron: '0 8 * * 1-5',
      timezone: 'Europe/Berlin',
      missed_policy: 'run_once',
      thread_id: 'th_reports',
    });
    const line = `${id}\treport@3\t0 8 * * 1-5 (Europe/Berlin)\tnext 2026-01-01T07:00:00.000Z\tmissed: run_once\tthread th_reports\n`;
    expect(created).toMatchObject({ code: ExitCode.OK, stdout: line });
    expect(listed).toMatchObject({ code: ExitCode.OK, stdout: line });
    expect(gateway.requests[2]).toMatchObject({ method: 'POST', path: `/v1/schedules/${id}/run` });
    expect(JSON.parse(gateway.requests[2]!.body)).toEqual({ idempotency_key: 'k-1' });
    expect(ran).toMatchObject({ code: ExitCode.OK, stdout: `${trace}\n` });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('INVALID_REQUEST');
  });

  it('webhooks create sends the URL and events for the --account, prints only the secret on stdout; without --account it is refused before any request', async () => {
    const secret = `whsec_${'A'.repeat(43)}=`;
    const endpoint = {
      id: `wh_${'1'.repeat(24)}`,
      account_id: 'acme',
      url: 'https://hooks.example.com/agentmesh',
      events: ['task.completed', 'task.failed'],
      created_at: '2026-01-01T00:00:00.000Z',
    };
    gateway.handle((request, response) =>
      request.method === 'POST'
        ? sendJson(response, 201, { ...endpoint, secret })
        : sendJson(response, 200, { webhooks: [endpoint] }),
    );

    const created = await cli([
      '--account',
      'acme',
      'webhooks',
      'create',
      endpoint.url,
      '--event',
      'task.completed',
      '--event',
      'task.failed',
    ]);
    const listed = await cli(['--account', 'acme', 'webhooks', 'list']);
    const refused = await cli(['webhooks', 'list']);

    expect(gateway.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/admin/webhooks',
      headers: { 'x-account-id': 'acme' },
    });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({
      url: endpoint.url,
      events: ['task.completed', 'task.failed'],
    });
    expect(created).toMatchObject({ code: ExitCode.OK, stdout: `${secret}\n` });
    expect(created.stderr).toContain('shown this once');
    expect(listed.stdout).toBe(
      `${endpoint.id}\t${endpoint.url}\ttask.completed,task.failed\t${endpoint.created_at}\n`,
    );
    expect(listed.stdout).not.toContain(secret);
    expect(refused.code).not.toBe(ExitCode.OK);
    expect(gateway.requests).toHaveLength(2);
  });
});
