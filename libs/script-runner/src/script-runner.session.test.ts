import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWorkspace, hostCapabilities, type Workspace } from './__fixtures__/sandbox-fixture.js';
import type { ScriptSession } from './script-runner.js';

let workspace: Workspace;
beforeAll(async () => {
  workspace = await createWorkspace();
});
afterAll(() => workspace.remove());

const capabilities = await hostCapabilities();

/** Sends one line and reads the script's one-line answer. */
async function ask(session: ScriptSession, line: string): Promise<Record<string, unknown>> {
  const lines = createInterface({ input: session.stdout });
  const answer = new Promise<string>((resolve) => lines.once('line', resolve));
  session.stdin.write(`${line}\n`);
  const text = await answer;
  lines.close();
  return JSON.parse(text) as Record<string, unknown>;
}

describe('ScriptRunner.start: a long-lived script in the sandbox', () => {
  it.skipIf(!capabilities.isolation)(
    'answers over stdin/stdout across several exchanges, sees only its sandbox and its declared variables, and stop() leaves no process or scratch behind',
    async () => {
      const runner = workspace.runner();
      const session = await runner.start({
        toolId: 'test:session',
        scriptPath: 'line-echo.mjs',
        language: 'nodejs',
        args: ['--flag'],
        env: { SESSION_SECRET: 'declared' },
      });
      const first = await ask(session, 'one');
      const second = await ask(session, 'two');
      expect(first).toMatchObject({
        got: 'one',
        args: ['--flag'],
        sees_host_files: false,
        session_secret_set: true,
      });
      // One process served both: it lives on between exchanges.
      expect(second).toMatchObject({ got: 'two', pid: first.pid });
      const scratchBefore = await readdir(join(workspace.cacheDir, 'scratch')).catch(() => []);
      expect(scratchBefore.length).toBeGreaterThan(0);

      const exit = await session.stop();
      expect(exit.signal ?? exit.exitCode).not.toBeNull();
      expect(await readdir(join(workspace.cacheDir, 'scratch')).catch(() => [])).toEqual([]);
    },
  );

  it('when the script path leaves the base directory, start is refused before anything runs', async () => {
    await expect(
      workspace.runner().start({ toolId: 'test:session', scriptPath: '../outside.mjs', language: 'nodejs' }),
    ).rejects.toMatchObject({ type: 'SecurityError' });
  });

  it('when the script exits by itself, exited resolves and its sandbox is removed', async () => {
    const runner = workspace.runner({ requireIsolation: capabilities.isolation });
    const session = await runner.start({
      toolId: 'test:session',
      scriptPath: 'line-echo.mjs',
      language: 'nodejs',
    });
    session.stdin.end();
    const exit = await session.exited;
    expect(exit.exitCode).toBe(0);
    expect(
      existsSync(join(workspace.cacheDir, 'scratch'))
        ? await readdir(join(workspace.cacheDir, 'scratch'))
        : [],
    ).toEqual([]);
  });
});
