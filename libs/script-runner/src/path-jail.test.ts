import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptErrorType } from './errors.js';
import type { ScriptRunner } from './script-runner.js';
import { createWorkspace, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;
let runner: ScriptRunner;

beforeAll(async () => {
  workspace = await createWorkspace();
  runner = workspace.runner();
  // A script outside the base directory, and links inside it that point there.
  await writeFile(join(workspace.outsideDir, 'evil.py'), 'print(\'{"escaped": true}\')\n');
  await symlink(join(workspace.outsideDir, 'evil.py'), join(workspace.baseDir, 'link-to-outside.py'));
  await symlink(workspace.outsideDir, join(workspace.baseDir, 'dir-link'));
  await mkdir(join(workspace.baseDir, 'nested'));
  await symlink(join(workspace.baseDir, 'echo.py'), join(workspace.baseDir, 'nested', 'link-to-echo.py'));
});
afterAll(() => workspace.remove());

const run = (scriptPath: string) => runner.run({ toolId: 'test:jail', scriptPath, language: 'python' });

describe('the script path jail', () => {
  it.each([
    ['a parent-directory path', '../outside/evil.py'],
    ['a path that climbs out after descending', 'nested/../../outside/evil.py'],
    ['an absolute path to a file outside', '/etc/passwd'],
    ['an absolute path into the base directory itself', '/tools/echo.py'],
    ['a symlink pointing outside', 'link-to-outside.py'],
    ['a file under a symlinked directory pointing outside', 'dir-link/evil.py'],
  ])('when the script path is %s, the run is refused with a SecurityError', async (_case, scriptPath) => {
    const result = await run(scriptPath);

    expect(result.success).toBe(false);
    expect(result.error).toMatchObject({ type: ScriptErrorType.SECURITY, code: 'FORBIDDEN' });
    expect(result.outputData).toBeUndefined();
  });

  it('when a symlink inside the base directory points to a script inside it, the script runs', async () => {
    const result = await run('nested/link-to-echo.py');

    expect(result.error).toBeUndefined();
    // The real script's directory is the working directory.
    expect(result.outputData).toMatchObject({ cwd: workspace.baseDir });
  });

  it('when the script does not exist, the run fails with an InputError and nothing starts', async () => {
    const result = await run('no-such-script.py');

    expect(result.error).toMatchObject({ type: ScriptErrorType.INPUT });
  });
});
