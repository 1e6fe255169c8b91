import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendJson, startStandInGateway, type StandInGateway } from '../__fixtures__/stand-in-gateway.js';
import { ExitCode, runCli } from './run-cli.js';

const ADMIN_KEY = 'am_admin_versions_key_7731';
const DIGEST = `sha256:${'a'.repeat(64)}`;
const V1 = {
  workflow_id: 'cli_agent',
  model: { model_name: 'm', base_url: 'http://127.0.0.1:9' },
  tools: [],
  max_steps: 10,
  version: 1,
  digest: DIGEST,
  scope: 'shared',
};

let gateway: StandInGateway;
beforeEach(async () => {
  gateway = await startStandInGateway();
});
afterEach(async () => {
  await gateway.stop();
});

async function cli(argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env: { url: gateway.url, apiKey: ADMIN_KEY },
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

describe('agentmesh agent version commands', () => {
  it('when asked for versions, it GETs the list and prints one line per version, the current one marked', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 200, {
        workflow_id: 'cli_agent',
        current: 2,
        versions: [
          { version: 2, digest: DIGEST, current: true },
          { version: 1, digest: DIGEST, current: false },
        ],
      }),
    );
    const { code, stdout } = await cli(['agents', 'versions', 'cli_agent']);
    expect(code).toBe(ExitCode.OK);
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: '/v1/admin/agents/cli_agent/versions' });
    expect(stdout.split('\n').filter(Boolean)).toEqual([`2\tcurrent\t${DIGEST}`, `1\t\t${DIGEST}`]);
  });

  it('when shown workflow@1, it GETs that version; a bare id GETs the current one', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, V1));
    expect((await cli(['agents', 'show', 'cli_agent@1'])).code).toBe(ExitCode.OK);
    expect((await cli(['agents', 'show', 'cli_agent'])).code).toBe(ExitCode.OK);
    expect(gateway.requests.map((r) => r.path)).toEqual([
      '/v1/admin/agents/cli_agent/versions/1',
      '/v1/admin/agents/cli_agent',
    ]);
  });

  it('when diffing, it prints one line per change with +, - or ~', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 200, {
        workflow_id: 'cli_agent',
        from: { version: 1, digest: DIGEST },
        to: { version: 2, digest: DIGEST },
        changes: [
          { path: '/system_prompt', op: 'changed', from: 'a', to: 'b' },
          { path: '/description', op: 'added', to: 'd' },
        ],
      }),
    );
    const { code, stdout } = await cli(['agents', 'diff', 'cli_agent', '1', '2']);
    expect(code).toBe(ExitCode.OK);
    expect(gateway.requests[0]?.path).toBe('/v1/admin/agents/cli_agent/diff?from=1&to=2');
    expect(stdout).toBe('~ /system_prompt: "a" -> "b"\n+ /description: "d"\n');
  });

  it('when rolling back, it POSTs the version and says which version now runs', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, V1));
    const { code, stdout } = await cli(['agents', 'rollback', 'cli_agent', '1']);
    expect(code).toBe(ExitCode.OK);
    expect(gateway.requests[0]).toMatchObject({
      method: 'POST',
      path: '/v1/admin/agents/cli_agent/rollback',
    });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ version: 1 });
    expect(stdout).toBe('agent cli_agent now runs version 1\n');
  });

  it('when a version argument is not a number from 1, it fails with one line and sends nothing', async () => {
    for (const argv of [
      ['agents', 'rollback', 'cli_agent', 'latest'],
      ['agents', 'diff', 'cli_agent', '0', '2'],
      ['agents', 'show', 'cli_agent@x'],
    ]) {
      const { code, stderr } = await cli(argv);
      expect(code, argv.join(' ')).toBe(ExitCode.FAILED);
      expect(stderr).toMatch(/^agentmesh: .*\n$/);
    }
    expect(gateway.requests).toHaveLength(0);
  });

  it('when submitting --workflow id@3, the pin goes to the gateway as the workflow_id', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 202, {
        trace_id: 'a'.repeat(32),
        events_subject: 'mesh.events.acme.x',
        events_url: '/v1/tasks/x/events',
      }),
    );
    const { code } = await cli(['submit', '--workflow', 'cli_agent@3', '--message', 'hi']);
    expect(code).toBe(ExitCode.OK);
    expect(JSON.parse(gateway.requests[0]!.body)).toMatchObject({ workflow_id: 'cli_agent@3' });
  });
});
