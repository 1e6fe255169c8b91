// What one run can do to the next and to the host: System V shared memory (a new IPC namespace per run),
// memory of all of a run's processes together (a cgroup per run), and disk (a size-limited scratch
// tmpfs); for runs and for long-lived scripts started with `start()`. Real scripts in real namespaces.
import { execFileSync } from 'node:child_process';
import { randomInt, randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { locateCgroups } from './cgroups.js';
import { ScriptErrorType } from './errors.js';
import { childrenOf } from './process-run.js';
import {
  createWorkspace,
  groupExists,
  hostCapabilities,
  type Workspace,
} from './__fixtures__/sandbox-fixture.js';
import type { ScriptSession } from './script-runner.js';

const MIB = 1024 * 1024;
// Per-process rlimits roomy enough for each child; the run's limit below what they hold together.
const PER_PROCESS = { memoryBytes: 512 * MIB };
const RUN_MEMORY = 192 * MIB;

let workspace: Workspace;
const usedKeys: number[] = [];

beforeAll(async () => {
  workspace = await createWorkspace();
});
afterAll(async () => {
  // Only a sandbox without an IPC namespace leaves these; do not let a failed run hold host memory.
  for (const key of usedKeys) {
    if (hostShmKeys().includes(key)) execFileSync('ipcrm', ['-M', String(key)]);
  }
  await workspace.remove();
});

const capabilities = await hostCapabilities();

/** Keys of the System V shared-memory segments the host (this process's IPC namespace) holds. */
function hostShmKeys(): number[] {
  return readFileSync('/proc/sysvipc/shm', 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => Number(line.trim().split(/\s+/)[0]));
}

function freshKeys(count: number): number[] {
  const first = randomInt(0x1000_0000, 0x7000_0000);
  const keys = Array.from({ length: count }, (_, index) => first + index);
  usedKeys.push(...keys);
  return keys;
}

/** The host directories of a run's cgroups, from a /proc/<pid>/cgroup text of one of its processes. */
function runCgroupDirs(procCgroup: string): string[] {
  const found = locateCgroups(procCgroup, readFileSync('/proc/self/mountinfo', 'utf8'));
  return [found.v2, found.v1?.memory, found.v1?.pids, found.v1?.cpu].filter(
    (dir): dir is string => dir?.includes('/agentmesh-run-') === true,
  );
}

/**
 * The cgroups a run's sandbox (started as `unsharePid`) entered: read from its first process once that
 * has entered them (it does so before anything else). Other test files run scripts at the same time in
 * the same parent cgroups, so a run's own are told apart by its processes, not by listing.
 */
async function enteredCgroups(unsharePid: number): Promise<string[]> {
  for (let attempt = 0; attempt < 500; attempt++) {
    for (const pid of childrenOf(unsharePid)) {
      try {
        const dirs = runCgroupDirs(readFileSync(`/proc/${pid}/cgroup`, 'utf8'));
        if (dirs.length > 0) return dirs;
      } catch {
        // Gone already.
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return [];
}

/** Sends one JSON line and reads the script's one-line answer. */
async function ask(session: ScriptSession, command: object): Promise<Record<string, unknown>> {
  const lines = createInterface({ input: session.stdout });
  const answer = new Promise<string>((resolve) => lines.once('line', resolve));
  session.stdin.write(`${JSON.stringify(command)}\n`);
  const text = await answer;
  lines.close();
  return JSON.parse(text) as Record<string, unknown>;
}

describe.skipIf(!capabilities.isolation)('a run of its own: shared memory', () => {
  it('when a run leaves System V shared-memory segments with a secret, nothing is left on the host and a later run finds none', async () => {
    const keys = freshKeys(3);
    const secret = `shm-secret-${randomUUID()}`;
    const runner = workspace.runner();

    const left = await runner.run({
      toolId: 'test:shm',
      scriptPath: 'shm-leave.py',
      language: 'python',
      inputData: { op: 'leave', key: keys[0], segments: 3, megabytes: 16, secret },
    });
    const onHost = hostShmKeys().filter((key) => keys.includes(key));
    const later = await runner.run({
      toolId: 'test:shm',
      scriptPath: 'shm-leave.py',
      language: 'python',
      inputData: { op: 'find', key: keys[0], segments: 3, length: secret.length },
    });

    expect(left.error).toBeUndefined();
    expect(left.outputData?.['shmids']).toHaveLength(3);
    expect(onHost).toEqual([]);
    expect(later.error).toBeUndefined();
    expect(later.outputData).toEqual({ found: [null, null, null] });
    expect(JSON.stringify(later)).not.toContain(secret);
  });
});

describe.skipIf(!capabilities.isolation)('a run of its own: host name and IPC tables', () => {
  it("when a run reads its host name and System V shared-memory table while the host holds a segment, it sees the sandbox's name and an empty table", async () => {
    const made = execFileSync('ipcmk', ['-M', '4096'], { encoding: 'utf8' });
    const shmid = /Shared memory id: (\d+)/.exec(made)?.[1] ?? '';
    try {
      const result = await workspace.runner().run({
        toolId: 'test:look',
        scriptPath: 'look-around.py',
        language: 'python',
        inputData: { read: ['/proc/sys/kernel/hostname', '/proc/sysvipc/shm'] },
      });

      expect(shmid).not.toBe('');
      expect(readFileSync('/proc/sysvipc/shm', 'utf8').trim().split('\n').length).toBeGreaterThan(1);
      expect(result.error).toBeUndefined();
      const read = result.outputData?.['read'] as Record<string, { ok?: string }>;
      expect(read['/proc/sys/kernel/hostname']?.ok).toBe('sandbox\n');
      expect(read['/proc/sysvipc/shm']?.ok?.trim().split('\n')).toHaveLength(1);
    } finally {
      if (shmid !== '') execFileSync('ipcrm', ['-m', shmid]);
    }
  });
});

describe.skipIf(!capabilities.isolation || capabilities.cgroup === undefined)(
  'a run of its own: memory of all its processes together (cgroup)',
  () => {
    it("when four children each under the per-process limit together hold more than the run's memory limit, the run is killed with a TOOL_ERROR saying so, and nothing of it is left", async () => {
      const runner = workspace.runner({ limits: { ...PER_PROCESS, runMemoryBytes: RUN_MEMORY } });
      let pgid: number | undefined;
      let cgroups: Promise<string[]> = Promise.resolve([]);

      const result = await runner.run({
        toolId: 'test:children',
        scriptPath: 'memory-children.py',
        language: 'python',
        inputData: { children: 4, megabytes: 64 },
        onSpawn: (pid) => {
          pgid = pid;
          cgroups = enteredCgroups(pid);
        },
      });
      const entered = await cgroups;

      expect(result.error).toMatchObject({
        type: ScriptErrorType.SCRIPT,
        code: 'TOOL_ERROR',
        retryable: false,
      });
      expect(result.error?.message).toContain('memory limit of 192 MiB');
      expect(groupExists(pgid ?? 0)).toBe(false);
      expect(entered.length).toBeGreaterThan(0);
      expect(entered.filter((dir) => existsSync(dir))).toEqual([]);
    });

    it('when the same children together fit the run limit, the run succeeds (the limit is what stopped it)', async () => {
      const runner = workspace.runner({ limits: { ...PER_PROCESS, runMemoryBytes: RUN_MEMORY } });

      const result = await runner.run({
        toolId: 'test:children',
        scriptPath: 'memory-children.py',
        language: 'python',
        inputData: { children: 4, megabytes: 16 },
      });

      expect(result.error).toBeUndefined();
      expect(result.outputData).toEqual({ ready: 4, statuses: [0, 0, 0, 0] });
    });

    it('when a run times out, the cgroup its processes were in is emptied and removed', async () => {
      const runner = workspace.runner();
      let cgroups: Promise<string[]> = Promise.resolve([]);

      const result = await runner.run({
        toolId: 'test:sleeper',
        scriptPath: 'sleeping-grandchild.py',
        language: 'python',
        inputData: { marker: `agentmesh-marker-${randomUUID()}` },
        timeoutMs: 1_500,
        onSpawn: (pid) => {
          cgroups = enteredCgroups(pid);
        },
      });
      const entered = await cgroups;

      expect(result.error?.type).toBe(ScriptErrorType.TIMEOUT);
      expect(entered.length).toBeGreaterThan(0);
      expect(entered.filter((dir) => existsSync(dir))).toEqual([]);
    });
  },
);

describe.skipIf(!capabilities.isolation)('a run of its own: disk', () => {
  it('when a run writes past its scratch quota in files each under the file-size limit, it fails with a TOOL_ERROR naming the full scratch space, and its HOME was never the host disk', async () => {
    const runner = workspace.runner({ limits: { scratchBytes: 32 * MIB } });

    const result = await runner.run({
      toolId: 'test:fill',
      scriptPath: 'fill-scratch.py',
      language: 'python',
      inputData: { files: 4, megabytes: 16 },
    });

    expect(result.error).toMatchObject({ type: ScriptErrorType.SCRIPT, code: 'TOOL_ERROR' });
    expect(result.error?.message).toContain('No space left on device');
    expect(result.error?.message).toContain('scratch space (HOME and TMPDIR) holds at most 32 MiB');
    const homeSize = Number(/home file system: (\d+) bytes/.exec(result.error?.details ?? '')?.[1]);
    expect(homeSize).toBeGreaterThan(0);
    expect(homeSize).toBeLessThanOrEqual(32 * MIB);
  });
});

describe.skipIf(!capabilities.isolation)('ScriptRunner.start: a long-lived script of its own', () => {
  it("when a session leaves a shared-memory segment and fills its scratch, the host holds neither, the session's own view works, and stop() removes everything", async () => {
    const runner = workspace.runner({ limits: { scratchBytes: 16 * MIB } });
    const [key = 0] = freshKeys(1);
    const secret = `session-secret-${randomUUID()}`;
    const session = await runner.start({
      toolId: 'test:isolated-session',
      scriptPath: 'isolation-session.py',
      language: 'python',
    });

    const made = await ask(session, { op: 'shm', key, megabytes: 8, secret });
    const { cgroup } = await ask(session, { op: 'cgroup' });
    const entered = runCgroupDirs(String(cgroup));
    const onHost = hostShmKeys().includes(key);
    const own = await ask(session, { op: 'find', key, length: secret.length });
    const filled = await ask(session, { op: 'fill', megabytes: 48 });
    await session.stop();

    expect(typeof made['shmid']).toBe('number');
    expect(onHost).toBe(false);
    expect(own).toEqual({ found: secret });
    expect(filled['error']).toBe('No space left on device');
    expect(filled['written']).toBeLessThanOrEqual(16 * MIB);
    expect(hostShmKeys()).not.toContain(key);
    if (capabilities.cgroup !== undefined) expect(entered.length).toBeGreaterThan(0);
    expect(entered.filter((dir) => existsSync(dir))).toEqual([]);
  });

  it.skipIf(capabilities.cgroup === undefined)(
    "when a session's children together hold more than its memory limit, the session is killed and exited says the memory limit did it",
    async () => {
      const runner = workspace.runner({ limits: { ...PER_PROCESS, runMemoryBytes: RUN_MEMORY } });
      const session = await runner.start({
        toolId: 'test:isolated-session',
        scriptPath: 'isolation-session.py',
        language: 'python',
      });
      const entered = runCgroupDirs(String((await ask(session, { op: 'cgroup' }))['cgroup']));

      const outcome = await Promise.race([
        ask(session, { op: 'hog', children: 4, megabytes: 64 }).then((answer) => ({ answer })),
        session.exited.then((exit) => ({ exit })),
      ]);
      // The kernel kills one child at a time; the session may still answer between that kill and the
      // runner's kill of the rest. Its answer then shows the killed child, and the session ends after it.
      const killedChild =
        'answer' in outcome &&
        (outcome.answer['statuses'] as number[]).some((status) => (status & 0x7f) === 9);
      const exit =
        'exit' in outcome ? outcome.exit : killedChild ? await session.exited : await session.stop();

      expect('exit' in outcome || killedChild).toBe(true);
      expect(exit.memoryLimitExceeded).toBe(true);
      expect(entered.length).toBeGreaterThan(0);
      expect(entered.filter((dir) => existsSync(dir))).toEqual([]);
    },
  );
});
