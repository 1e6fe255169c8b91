// What of the host a sandboxed script can see: only the interpreter, its own directory, its grants and
// its own scratch home. Every test runs real scripts in real namespaces.
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { constants, existsSync, openSync } from 'node:fs';
import { chmod, mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptExecutionResult } from './script-runner.js';
import { createWorkspace, hostCapabilities, type Workspace } from './__fixtures__/sandbox-fixture.js';

let workspace: Workspace;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  workspace = await createWorkspace();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(() => workspace.remove());

const capabilities = await hostCapabilities();
const skipReason = capabilities.isolation ? '' : ` (skipped: ${capabilities.isolationUnavailable})`;

type Attempt = { ok?: unknown; error?: string };
interface LookAround {
  read: Record<string, Attempt>;
  list: Record<string, Attempt>;
  home: string;
}

function lookAround(result: ScriptExecutionResult): LookAround {
  expect(result.error).toBeUndefined();
  return result.outputData as unknown as LookAround;
}

/** A world-readable file holding a canary, removed after the test. */
async function plantCanary(dir: string): Promise<{ path: string; canary: string }> {
  const canary = `VAULT_PRIVATE_KEYS=canary-${randomUUID()}`;
  const path = join(dir, `agentmesh-canary-${randomUUID()}.env`);
  await writeFile(path, `${canary}\nCREDENTIALS_MASTER_KEY=${canary}\n`, { mode: 0o644 });
  await chmod(path, 0o644);
  cleanups.push(() => rm(path, { force: true }));
  return { path, canary };
}

describe.skipIf(!capabilities.isolation)(`the host outside a run's grants${skipReason}`, () => {
  it('when a script reads world-readable host files in /tmp, /etc and /srv, they do not exist for it', async () => {
    const planted = [await plantCanary(tmpdir()), await plantCanary('/etc')];
    if (existsSync('/srv')) planted.push(await plantCanary('/srv'));

    const result = await workspace.runner().run({
      toolId: 'test:look',
      scriptPath: 'look-around.py',
      language: 'python',
      inputData: {
        read: planted.map(({ path }) => path),
        list: ['/', '/etc', tmpdir(), '/root', homedir(), '/proc'],
      },
    });

    const seen = lookAround(result);
    expect(JSON.stringify(result)).not.toContain(planted[0]?.canary);
    for (const { path, canary } of planted) {
      expect(seen.read[path]?.error).toMatch(/^FileNotFoundError/);
      expect(JSON.stringify(seen)).not.toContain(canary);
    }
    // The runner's own home is not there at all (not merely forbidden).
    expect(seen.list['/root']?.error).toMatch(/^FileNotFoundError/);
    expect(seen.list[homedir()]?.error).toMatch(/^FileNotFoundError/);
    const top = seen.list['/']?.ok as string[];
    for (const hidden of ['root', 'var', 'srv', 'opt', 'mnt', 'boot', 'sys'])
      expect(top).not.toContain(hidden);
    // /tmp holds only the way to the script's directory.
    expect(seen.list[tmpdir()]?.ok).toEqual([basename(workspace.root)]);
    const etc = seen.list['/etc']?.ok as string[];
    expect(etc).toContain('passwd');
    expect(etc).not.toContain('shadow');
    expect(etc.some((name) => name.startsWith('agentmesh-canary-'))).toBe(false);
    // Only the run's own processes, and not even the sandbox's root helper (pid 1).
    expect(seen.list['/proc']?.ok as string[]).not.toContain('1');
  });

  it("when a script looks for another concurrently running run's scratch file, it is neither in its own home nor on the host's disk", async () => {
    const runner = workspace.runner();
    const ready = join(workspace.writableDir, `ready-${randomUUID()}`);
    const gate = join(workspace.writableDir, `gate-${randomUUID()}`);
    for (const fifo of [ready, gate]) {
      execFileSync('mkfifo', ['-m', '0666', fifo]);
      cleanups.push(() => rm(fifo, { force: true }));
    }
    // Opened read-write and non-blocking: neither open waits for the script, and neither pipe sees
    // end-of-file while the test holds it.
    const readySignal = new Socket({ fd: openSync(ready, constants.O_RDWR | constants.O_NONBLOCK) });
    const gateFd = openSync(gate, constants.O_RDWR | constants.O_NONBLOCK);
    const gateSocket = new Socket({ fd: gateFd, readable: false, writable: true });
    cleanups.push(async () => {
      readySignal.destroy();
      gateSocket.destroy();
    });
    const canary = `scratch-canary-${randomUUID()}`;

    const first = runner.run({
      toolId: 'test:hold',
      scriptPath: 'hold-scratch.py',
      language: 'python',
      inputData: { canary, ready, gate },
      securityContext: { fileAccess: { allowWrite: [workspace.writableDir] } },
    });
    await Promise.race([
      new Promise((resolve) => readySignal.once('data', resolve)),
      first.then((result) => {
        throw new Error(`the first run ended before it was ready: ${JSON.stringify(result)}`);
      }),
    ]);
    // The first run's home is a tmpfs in its own mount namespace: the file was never on the host's disk.
    const onHostDisk = await findScratchFiles(join(workspace.cacheDir, 'scratch'), 'secret.txt');
    const second = await runner.run({
      toolId: 'test:look',
      scriptPath: 'look-around.py',
      language: 'python',
      inputData: {
        read: ['$HOME/secret.txt'],
        list: [join(workspace.cacheDir, 'scratch'), '$HOME/..', '$HOME'],
      },
    });
    gateSocket.write('go\n');
    const held = await first;

    expect(held.error).toBeUndefined();
    expect(held.outputData).toEqual({ own: canary });
    const seen = lookAround(second);
    expect(JSON.stringify(second)).not.toContain(canary);
    expect(onHostDisk).toEqual([]);
    expect(seen.read['$HOME/secret.txt']?.error).toMatch(/^FileNotFoundError/);
    expect(seen.list[join(workspace.cacheDir, 'scratch')]?.error).toMatch(/^FileNotFoundError/);
    expect(seen.list['$HOME/..']?.ok).toEqual(['sandbox']);
    expect(seen.list['$HOME']?.ok).toEqual([]);
  });
});

describe.skipIf(!capabilities.isolation)(`fileAccess.allowRead${skipReason}`, () => {
  let dataDir: string;

  beforeAll(async () => {
    dataDir = join(workspace.root, 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await writeFile(join(dataDir, 'a.txt'), 'contents of a', { mode: 0o644 });
    await writeFile(join(dataDir, 'b.txt'), 'contents of b', { mode: 0o644 });
  });

  it('when a tool may read one file the policy allows, it reads exactly that file and nothing beside it', async () => {
    const outsideFile = join(workspace.outsideDir, 'x.txt');
    await writeFile(outsideFile, 'outside', { mode: 0o644 });
    const runner = workspace.runner({ allowReadPaths: [dataDir] });

    const result = await runner.run({
      toolId: 'test:look',
      scriptPath: 'look-around.py',
      language: 'python',
      inputData: {
        read: [join(dataDir, 'a.txt'), join(dataDir, 'b.txt'), outsideFile],
        list: [dataDir],
      },
      securityContext: {
        fileAccess: { allowRead: ['self', './*', join(dataDir, 'a.txt'), outsideFile] },
      },
    });

    const seen = lookAround(result);
    expect(seen.read[join(dataDir, 'a.txt')]).toEqual({ ok: 'contents of a' });
    expect(seen.read[join(dataDir, 'b.txt')]?.error).toMatch(/^FileNotFoundError/);
    expect(seen.list[dataDir]).toEqual({ ok: ['a.txt'] });
    expect(seen.read[outsideFile]?.error).toMatch(/^FileNotFoundError/);
    expect(result.logs?.join('\n')).toContain(`read access to "${outsideFile}" refused by the global policy`);
  });

  it('when a tool may read a directory (relative to its script, ending in /**), it reads the whole tree, read-only', async () => {
    const runner = workspace.runner({ allowReadPaths: [dataDir], allowWritePaths: [] });

    const read = await runner.run({
      toolId: 'test:look',
      scriptPath: 'look-around.py',
      language: 'python',
      inputData: { read: [join(dataDir, 'a.txt'), join(dataDir, 'b.txt')], list: [workspace.root] },
      securityContext: { fileAccess: { allowRead: ['../data/**'] } },
    });
    const write = await runner.run({
      toolId: 'test:write',
      scriptPath: 'write-file.py',
      language: 'python',
      inputData: { paths: [join(dataDir, 'a.txt')], content: 'overwritten' },
      securityContext: { fileAccess: { allowRead: ['../data/**'] } },
    });

    expect(lookAround(read).read).toEqual({
      [join(dataDir, 'a.txt')]: { ok: 'contents of a' },
      [join(dataDir, 'b.txt')]: { ok: 'contents of b' },
    });
    // Beside the script's directory (tools) only the granted tree: not the cache, nor the other directories.
    expect(lookAround(read).list[workspace.root]).toEqual({ ok: ['data', 'tools'] });
    expect((write.outputData?.['results'] as Record<string, string>)[join(dataDir, 'a.txt')]).toMatch(
      /Read-only file system/,
    );
  });

  it('when a tool asks to read the cache directory or a path the sandbox builds itself, it is refused', async () => {
    const runner = workspace.runner({ allowReadPaths: [workspace.root, '/etc'] });

    const result = await runner.run({
      toolId: 'test:look',
      scriptPath: 'look-around.py',
      language: 'python',
      inputData: { list: [join(workspace.cacheDir, 'scratch')] },
      securityContext: { fileAccess: { allowRead: [workspace.cacheDir, '/etc'] } },
    });

    expect(lookAround(result).list[join(workspace.cacheDir, 'scratch')]?.error).toMatch(/^FileNotFoundError/);
    const logs = result.logs?.join('\n');
    expect(logs).toContain(`read access to "${workspace.cacheDir}" refused: the runner's cache directory`);
    expect(logs).toContain('read access to "/etc" refused: it would hide /etc');
  });
});

/** The path of the first file named `name` at most two levels below `dir`. */
async function findScratchFiles(dir: string, name: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true });
  return entries.filter((entry) => basename(entry) === name).map((entry) => join(dir, entry));
}
