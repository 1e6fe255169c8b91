// Test workspaces for the script runner: a fresh temporary tree holding a copy of the fixture scripts
// (the base directory), a cache directory, directories to grant or deny writes to, and a runner over
// them. Everything is world-traversable because scripts run as an unprivileged user.
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ScriptRunner, type RunnerCapabilities } from '../script-runner.js';
import type { ScriptRunnerPolicy } from '../policy.js';

const FIXTURES = new URL('../__fixtures__/scripts/', import.meta.url);

export interface Workspace {
  readonly root: string;
  /** The runner's base directory: a copy of `__fixtures__/scripts`. */
  readonly baseDir: string;
  readonly cacheDir: string;
  /** World-writable directory the policy lets tools write to. */
  readonly writableDir: string;
  /** World-writable directory outside every write grant. */
  readonly outsideDir: string;
  runner(overrides?: Partial<ScriptRunnerPolicy>): ScriptRunner;
  remove(): Promise<void>;
}

export async function createWorkspace(): Promise<Workspace> {
  const root = await mkdtemp(join(tmpdir(), 'script-runner-'));
  await chmod(root, 0o755);
  const baseDir = join(root, 'tools');
  const cacheDir = join(root, 'cache');
  const writableDir = join(root, 'writable');
  const outsideDir = join(root, 'outside');
  await cp(FIXTURES, baseDir, { recursive: true });
  for (const dir of [cacheDir, writableDir, outsideDir]) await mkdir(dir);
  // World-writable, so only the sandbox (not file permissions) can stop a write.
  await chmod(writableDir, 0o777);
  await chmod(outsideDir, 0o777);
  return {
    root,
    baseDir,
    cacheDir,
    writableDir,
    outsideDir,
    runner: (overrides = {}) =>
      new ScriptRunner({
        baseDir,
        cacheDir,
        hostEnv: process.env,
        allowWritePaths: [writableDir],
        defaultTimeoutMs: 20_000,
        ...overrides,
      }),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

/** What this host's sandbox can do (tests skip with the stated reason when it cannot). */
export async function hostCapabilities(): Promise<RunnerCapabilities> {
  const probe = await createWorkspace();
  try {
    return await probe.runner().capabilities();
  } finally {
    await probe.remove();
  }
}

/** Builds `wheels/meshdep-1.0.0-py3-none-any.whl` beside the deps-python fixture (no PyPI here). */
export async function buildMeshdepWheel(baseDir: string): Promise<void> {
  const dir = join(baseDir, 'deps-python');
  await mkdir(join(dir, 'wheels'), { recursive: true });
  const source = await readFile(join(dir, 'meshdep-src', 'meshdep', '__init__.py'), 'utf8');
  const build = [
    'import sys, zipfile',
    'path, source = sys.argv[1], sys.argv[2]',
    'info = "meshdep-1.0.0.dist-info"',
    'files = {',
    '  "meshdep/__init__.py": source,',
    '  info + "/METADATA": "Metadata-Version: 2.1\\nName: meshdep\\nVersion: 1.0.0\\n",',
    '  info + "/WHEEL": "Wheel-Version: 1.0\\nGenerator: agentmesh-tests\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",',
    '}',
    'files[info + "/RECORD"] = "".join(name + ",,\\n" for name in files) + info + "/RECORD,,\\n"',
    'with zipfile.ZipFile(path, "w") as wheel:',
    '  for name, text in files.items(): wheel.writestr(name, text)',
  ].join('\n');
  await promisify(execFile)('python3', [
    '-c',
    build,
    join(dir, 'wheels', 'meshdep-1.0.0-py3-none-any.whl'),
    source,
  ]);
}

/** Pids of live processes whose command line contains `text`. */
export async function processesMentioning(text: string): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(text)) pids.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return pids;
}

/** Whether any process of the group `pgid` still exists. */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}

/** How many live processes run with real uid `uid`. */
export async function countProcessesOfUser(uid: number): Promise<number> {
  let count = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const status = await readFile(`/proc/${entry}/status`, 'utf8');
      const realUid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(realUid) === uid && !/^State:\s+Z/m.test(status)) count++;
    } catch {
      // The process ended while we looked.
    }
  }
  return count;
}
