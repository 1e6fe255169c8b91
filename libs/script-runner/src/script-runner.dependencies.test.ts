import { existsSync } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMarker } from './dependency-env.js';
import { ScriptErrorType } from './errors.js';
import type { ScriptRunner } from './script-runner.js';
import { buildMeshdepWheel, createWorkspace, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;
let runner: ScriptRunner;

beforeAll(async () => {
  workspace = await createWorkspace();
  await buildMeshdepWheel(workspace.baseDir);
  runner = workspace.runner({ dependencyTimeoutMs: 120_000 });
});
afterAll(() => workspace.remove());

const capabilities = await (async () => {
  const probe = await createWorkspace();
  try {
    return await probe.runner().capabilities();
  } finally {
    await probe.remove();
  }
})();

async function environmentDirs(language: string): Promise<string[]> {
  const envs = join(workspace.cacheDir, 'envs');
  if (!existsSync(envs)) return [];
  return (await readdir(envs))
    .filter((name) => name.startsWith(`${language}-`))
    .map((name) => join(envs, name));
}

function builtLog(logs: readonly string[] | undefined): 'built' | 'reused' | undefined {
  const line = logs?.find((entry) => entry.startsWith('dependency environment '));
  return line?.includes(' built: ') ? 'built' : line?.includes(' reused: ') ? 'reused' : undefined;
}

describe.skipIf(!capabilities.isolation)(
  `dependency environments ${capabilities.isolation ? '' : `(skipped: ${capabilities.isolationUnavailable})`}`,
  () => {
    it('when two first runs of a python script with requirements start together, one venv is built and both use it', async () => {
      const run = () =>
        runner.run({
          toolId: 'test:deps',
          scriptPath: 'deps-python/app.py',
          language: 'python',
          inputData: { name: 'ada' },
        });

      const [first, second] = await Promise.all([run(), run()]);

      for (const result of [first, second]) {
        expect(result.error).toBeUndefined();
        expect(result.outputData?.['greeting']).toBe('hello ada from meshdep');
      }
      expect([builtLog(first.logs), builtLog(second.logs)].sort()).toEqual(['built', 'reused']);
      const [envDir, ...others] = await environmentDirs('python');
      expect(others).toEqual([]);
      expect(first.outputData?.['prefix']).toBe(join(envDir ?? '', 'venv'));
      // The tool's own directory was not written to.
      expect(existsSync(join(workspace.baseDir, 'deps-python', 'build'))).toBe(false);
    });

    it('when the python script runs again, the environment is reused, not rebuilt', async () => {
      const [envDir] = await environmentDirs('python');
      const before = await readMarker(envDir ?? '');

      const result = await runner.run({
        toolId: 'test:deps',
        scriptPath: 'deps-python/app.py',
        language: 'python',
        inputData: { name: 'bob' },
      });

      expect(result.outputData?.['greeting']).toBe('hello bob from meshdep');
      expect(builtLog(result.logs)).toBe('reused');
      expect(before).toBeDefined();
      expect(await readMarker(envDir ?? '')).toEqual(before);
    });

    it('when a node script has a package.json with a local file: dependency, it gets its own node_modules', async () => {
      const run = () =>
        runner.run({
          toolId: 'test:deps',
          scriptPath: 'deps-node/app.mjs',
          language: 'nodejs',
          inputData: { name: 'cy' },
        });

      const first = await run();
      const [envDir] = await environmentDirs('nodejs');
      const marker = await readMarker(envDir ?? '');
      const second = await run();

      expect(first.error).toBeUndefined();
      expect(first.outputData).toEqual({ greeting: 'hello cy from mesh-local-dep' });
      expect(builtLog(first.logs)).toBe('built');
      expect(second.outputData).toEqual({ greeting: 'hello cy from mesh-local-dep' });
      expect(builtLog(second.logs)).toBe('reused');
      expect(await readMarker(envDir ?? '')).toEqual(marker);
      // node_modules lives in the cache, not beside the tool.
      expect(existsSync(join(workspace.baseDir, 'deps-node', 'node_modules'))).toBe(false);
      // (A link to ../mesh-local-dep, which resolves only inside the sandbox's view of the directory.)
      expect(
        (
          await lstat(join(envDir ?? '', 'layer', 'upper', 'node_modules', 'mesh-local-dep'))
        ).isSymbolicLink(),
      ).toBe(true);
    });

    it('when a requirement cannot be installed, the run is a DependencyError with the installer output', async () => {
      const result = await runner.run({
        toolId: 'test:deps',
        scriptPath: 'deps-broken/app.py',
        language: 'python',
      });

      expect(result.error?.type).toBe(ScriptErrorType.DEPENDENCY);
      expect(result.error?.details).toContain('no-such-package-for-agentmesh');
      // A failed build leaves nothing half-made behind to be mistaken for a finished one.
      for (const dir of await environmentDirs('python')) expect(await readMarker(dir)).toBeDefined();
    });
  },
);
