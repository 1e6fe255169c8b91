import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptErrorType } from './errors.js';
import { createWorkspace, hostCapabilities, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;

beforeAll(async () => {
  workspace = await createWorkspace();
});
afterAll(() => workspace.remove());

const capabilities = await hostCapabilities();
const noNamespaces = !capabilities.isolation;
const skipReason = capabilities.isolationUnavailable ?? '';

describe('the scrubbed environment', () => {
  it("when the runner's environment holds a secret, the script sees only allow-listed and declared variables", async () => {
    const canary = `canary-${Math.random().toString(36).slice(2)}`;
    const hostEnv = { ...process.env, AGENTMESH_CANARY_SECRET: canary, LANG: 'C.UTF-8' };
    const runner = workspace.runner({ hostEnv, envAllowList: ['PATH', 'LANG'] });

    const result = await runner.run({
      toolId: 'test:env',
      scriptPath: 'env-dump.py',
      language: 'python',
      env: { TOOL_SETTING: 'declared-by-the-tool' },
    });

    expect(result.error).toBeUndefined();
    const env = result.outputData?.['env'] as Record<string, string>;
    expect(JSON.stringify(result.outputData)).not.toContain(canary);
    expect(env['AGENTMESH_CANARY_SECRET']).toBeUndefined();
    expect(env['TOOL_SETTING']).toBe('declared-by-the-tool');
    expect(env['LANG']).toBe('C.UTF-8');
    expect(env['PATH']).toBe(process.env['PATH']);
    expect(Object.keys(env).sort()).toEqual(
      expect.arrayContaining(['HOME', 'LANG', 'PATH', 'TMPDIR', 'TOOL_SETTING']),
    );
    expect(
      Object.keys(env).every((name) =>
        ['HOME', 'LANG', 'PATH', 'TMPDIR', 'TOOL_SETTING', 'LC_CTYPE'].includes(name),
      ),
    ).toBe(true);
  });

  it('when a tool declares a variable with an invalid name, the run is refused as bad input', async () => {
    const result = await workspace.runner().run({
      toolId: 'test:env',
      scriptPath: 'env-dump.py',
      language: 'python',
      env: { 'BAD NAME': 'x' },
    });

    expect(result.error?.type).toBe(ScriptErrorType.INPUT);
  });
});

describe.skipIf(noNamespaces)(`filesystem writes ${noNamespaces ? `(skipped: ${skipReason})` : ''}`, () => {
  it('when a tool may write to a path the policy allows, writing there works and everywhere else fails', async () => {
    const allowed = join(workspace.writableDir, 'out.txt');
    const outside = join(workspace.outsideDir, 'out.txt');
    const besideScript = join(workspace.baseDir, 'out.txt');
    const inHostTmp = join(tmpdir(), `agentmesh-sandbox-${randomUUID()}.txt`);
    const runner = workspace.runner();

    const result = await runner.run({
      toolId: 'test:write',
      scriptPath: 'write-file.py',
      language: 'python',
      inputData: {
        paths: [allowed, outside, besideScript, inHostTmp],
        content: 'data',
      },
      securityContext: { fileAccess: { allowWrite: [`${workspace.writableDir}/**`] } },
    });

    expect(result.error).toBeUndefined();
    const results = result.outputData?.['results'] as Record<string, string>;
    expect(results[allowed]).toBe('written');
    expect(readFileSync(allowed, 'utf8')).toBe('data');
    // The outside directory is world-writable: only the sandbox stops the write (it is not even there).
    expect(results[outside]).toMatch(/No such file or directory/);
    expect(existsSync(outside)).toBe(false);
    expect(results[besideScript]).toMatch(/Read-only file system/);
    expect(existsSync(besideScript)).toBe(false);
    // The sandbox's /tmp is only the (read-only) way to the script's directory.
    expect(results[inHostTmp]).toMatch(/Read-only file system/);
    expect(existsSync(inHostTmp)).toBe(false);
  });

  it('when a tool asks to write where the global policy does not allow, the write fails and the logs say why', async () => {
    const target = join(workspace.outsideDir, 'requested.txt');
    const runner = workspace.runner();

    const result = await runner.run({
      toolId: 'test:write',
      scriptPath: 'write-file.py',
      language: 'python',
      inputData: { paths: [target], content: 'data' },
      securityContext: { fileAccess: { allowWrite: [workspace.outsideDir] } },
    });

    expect((result.outputData?.['results'] as Record<string, string>)[target]).toMatch(
      /No such file or directory/,
    );
    expect(existsSync(target)).toBe(false);
    expect(result.logs?.join('\n')).toContain('refused by the global policy');
  });

  it('when a tool asks for a directory relative to its script, it is granted if the policy covers it', async () => {
    const cacheDir = join(workspace.baseDir, '.cache');
    await mkdir(cacheDir);
    await chmod(cacheDir, 0o777);
    const runner = workspace.runner({ allowWritePaths: [cacheDir] });

    const result = await runner.run({
      toolId: 'test:write',
      scriptPath: 'write-file.py',
      language: 'python',
      inputData: { paths: ['.cache/note.txt', 'note.txt'], content: 'relative' },
      securityContext: { fileAccess: { allowWrite: ['.cache/**'] } },
    });

    const results = result.outputData?.['results'] as Record<string, string>;
    expect(results['.cache/note.txt']).toBe('written');
    expect(readFileSync(join(cacheDir, 'note.txt'), 'utf8')).toBe('relative');
    expect(results['note.txt']).toMatch(/Read-only file system/);
  });
});
