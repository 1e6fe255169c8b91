// The environment a script gets: variables that change loading are refused wherever they come from, and
// the environment reaches only processes that already dropped their privileges.
import { randomUUID } from 'node:crypto';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptErrorType } from './errors.js';
import { createWorkspace, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;

beforeAll(async () => {
  workspace = await createWorkspace();
});
afterAll(() => workspace.remove());

describe('variables that change what gets loaded', () => {
  it.each([
    ['LD_PRELOAD', '/tmp/evil.so'],
    ['LD_LIBRARY_PATH', '/tmp'],
    ['NODE_OPTIONS', '--require /tmp/evil.js'],
    ['NODE_PATH', '/tmp'],
    ['PYTHONPATH', '/tmp'],
    ['PYTHONSTARTUP', '/tmp/evil.py'],
    ['BUN_OPTIONS', '--preload /tmp/evil.ts'],
    ['GCONV_PATH', '/tmp'],
    ['BASH_ENV', '/tmp/evil.sh'],
  ])(
    'when run({env}) carries %s, the run is refused with a SecurityError and nothing starts',
    async (name, value) => {
      let started = false;

      const result = await workspace.runner().run({
        toolId: 'test:env',
        scriptPath: 'env-dump.py',
        language: 'python',
        env: { TOOL_SETTING: 'fine', [name]: value },
        onSpawn: () => {
          started = true;
        },
      });

      expect(result.success).toBe(false);
      expect(result.error).toMatchObject({
        type: ScriptErrorType.SECURITY,
        code: 'FORBIDDEN',
        retryable: false,
      });
      expect(result.error?.message).toContain(name);
      expect(started).toBe(false);
    },
  );

  it('when a tool sets only harmless variables of those families, the script gets them', async () => {
    const result = await workspace.runner().run({
      toolId: 'test:env',
      scriptPath: 'env-dump.py',
      language: 'python',
      env: { PYTHONUNBUFFERED: '1', NODE_ENV: 'production' },
    });

    expect(result.error).toBeUndefined();
    expect(result.outputData?.['env']).toMatchObject({ PYTHONUNBUFFERED: '1', NODE_ENV: 'production' });
  });

  it('when the policy allow-lists LD_PRELOAD or NODE_OPTIONS from the host, the runner refuses the configuration', () => {
    expect(() => workspace.runner({ envAllowList: ['PATH', 'LD_PRELOAD'] })).toThrow(/LD_PRELOAD/);
    expect(() => workspace.runner({ envAllowList: ['NODE_OPTIONS'] })).toThrow(/NODE_OPTIONS/);
  });
});

describe('when the environment is applied', () => {
  it('a variable given through env reaches the script, and no process that ran as root ever had it', async () => {
    // setpriv and prlimit replaced by wrappers that report their uid and whether they see the marker,
    // then hand over to the real tools; they run between the root helper and the script.
    const wrappers = join(workspace.root, 'wrapped-tools');
    await mkdir(wrappers, { mode: 0o755 });
    for (const tool of ['setpriv', 'prlimit']) {
      const wrapper = join(wrappers, tool);
      await writeFile(
        wrapper,
        [
          '#!/bin/sh',
          `echo "tool-wrapper ${tool} uid=$(id -u) marker=\${AGENTMESH_ORDER_MARKER:-absent}" >&2`,
          `exec /usr/bin/${tool} "$@"`,
          '',
        ].join('\n'),
      );
      await chmod(wrapper, 0o755);
    }
    const marker = `marker-${randomUUID()}`;
    const runner = workspace.runner({
      hostEnv: { ...process.env, PATH: `${wrappers}:${process.env['PATH']}` },
      // The wrappers report on the run's stderr; that is not the script failing.
      stderrIsError: false,
    });

    const result = await runner.run({
      toolId: 'test:env',
      scriptPath: 'env-dump.py',
      language: 'python',
      env: { AGENTMESH_ORDER_MARKER: marker },
    });

    expect(result.error).toBeUndefined();
    expect(result.outputData?.['env']).toMatchObject({ AGENTMESH_ORDER_MARKER: marker });
    const reports = (result.logs?.join('\n') ?? '')
      .split('\n')
      .filter((line) => line.includes('tool-wrapper'));
    // Both tools really ran (the test is not vacuous)...
    expect(reports.some((line) => line.includes('tool-wrapper setpriv'))).toBe(true);
    expect(reports.some((line) => line.includes('tool-wrapper prlimit'))).toBe(true);
    // ...and every one that ran as root saw no trace of the variable.
    const asRoot = reports.filter((line) => line.includes(' uid=0 '));
    for (const line of asRoot) expect(line).toContain('marker=absent');
    expect(reports.filter((line) => line.includes(marker)).every((line) => !line.includes(' uid=0 '))).toBe(
      true,
    );
  });
});
