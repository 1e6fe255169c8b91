import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ScriptErrorType } from './errors.js';
import {
  countProcessesOfUser,
  createWorkspace,
  groupExists,
  processesMentioning,
  type Workspace,
} from './__fixtures__/sandbox-fixture.js';

// Process counts (RLIMIT_NPROC) are per user: this file's scripts run as their own uid so that the fork
// bomb cannot starve scripts that other test files run at the same time as nobody.
const SANDBOX_USER = { uid: 64_901, gid: 64_901 };

let workspace: Workspace;

beforeAll(async () => {
  workspace = await createWorkspace();
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

describe('time limit', () => {
  it('when a script forks a sleeping grandchild and times out, no process it started is left', async () => {
    const marker = `agentmesh-marker-${randomUUID()}`;
    const runner = workspace.runner({ sandboxUser: SANDBOX_USER });
    let pgid: number | undefined;
    let sawGrandchildren = false;

    const result = await runner.run({
      toolId: 'test:sleeper',
      scriptPath: 'sleeping-grandchild.py',
      language: 'python',
      inputData: { marker },
      timeoutMs: 3_000,
      onSpawn: (pid) => {
        pgid = pid;
        // Sample while the run is in progress: the grandchildren must really have been started.
        const poll = async () => {
          for (let i = 0; i < 100 && !sawGrandchildren; i++) {
            sawGrandchildren = (await processesMentioning(marker)).length >= 2;
            if (!sawGrandchildren) await new Promise((resolve) => setTimeout(resolve, 25));
          }
        };
        void poll();
      },
    });

    expect(result.error).toMatchObject({
      type: ScriptErrorType.TIMEOUT,
      code: 'TOOL_TIMEOUT',
      retryable: true,
    });
    expect(sawGrandchildren).toBe(true);
    expect(pgid).toBeDefined();
    expect(groupExists(pgid ?? 0)).toBe(false);
    // One grandchild moved to its own session (and process group): the pid namespace took it down too.
    expect(await processesMentioning(marker)).toEqual([]);
  });
});

describe.skipIf(!capabilities.resourceLimits)('resource limits (prlimit)', () => {
  it('when a script starts more processes than allowed, the extra ones are refused', async () => {
    const runner = workspace.runner({ sandboxUser: SANDBOX_USER, limits: { maxProcesses: 8 } });

    const result = await runner.run({
      toolId: 'test:spawn',
      scriptPath: 'spawn-many.py',
      language: 'python',
      inputData: { count: 50 },
    });

    expect(result.error).toBeUndefined();
    expect(result.outputData?.['started']).toBeLessThan(8);
    expect(result.outputData?.['refusal']).toMatch(/BlockingIOError|Resource temporarily unavailable/);
  });

  it('when a script is a fork bomb, it is contained and nothing of it is left after the time limit', async () => {
    const runner = workspace.runner({ sandboxUser: SANDBOX_USER, limits: { maxProcesses: 16 } });
    let pgid: number | undefined;
    let running = true;
    let mostProcesses = 0;
    const sampling = (async () => {
      while (running) {
        mostProcesses = Math.max(mostProcesses, await countProcessesOfUser(SANDBOX_USER.uid));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();

    const result = await runner.run({
      toolId: 'test:bomb',
      scriptPath: 'fork-bomb.py',
      language: 'python',
      timeoutMs: 2_000,
      onSpawn: (pid) => {
        pgid = pid;
      },
    });
    running = false;
    await sampling;

    expect(result.error?.type).toBe(ScriptErrorType.TIMEOUT);
    // It did multiply, but never past the process limit.
    expect(mostProcesses).toBeGreaterThan(1);
    expect(mostProcesses).toBeLessThanOrEqual(16);
    expect(groupExists(pgid ?? 0)).toBe(false);
    expect(await processesMentioning(`${workspace.baseDir}/fork-bomb.py`)).toEqual([]);
  });

  it('when a script allocates more memory than allowed, it fails with a ScriptError', async () => {
    const runner = workspace.runner({
      sandboxUser: SANDBOX_USER,
      limits: { memoryBytes: 256 * 1024 * 1024 },
    });

    const result = await runner.run({
      toolId: 'test:hog',
      scriptPath: 'memory-hog.py',
      language: 'python',
      inputData: { megabytes: 1024 },
    });

    expect(result.error?.type).toBe(ScriptErrorType.SCRIPT);
    expect(result.error?.details).toContain('MemoryError');
  });

  it('when the same allocation fits the limit, it succeeds (the limit is what stopped it)', async () => {
    const runner = workspace.runner({
      sandboxUser: SANDBOX_USER,
      limits: { memoryBytes: 256 * 1024 * 1024 },
    });

    const result = await runner.run({
      toolId: 'test:hog',
      scriptPath: 'memory-hog.py',
      language: 'python',
      inputData: { megabytes: 64 },
    });

    expect(result.outputData).toEqual({ allocated: 64 * 1024 * 1024 });
  });

  it('when a script uses up its CPU seconds, it is stopped by SIGXCPU, not by the time limit', async () => {
    const runner = workspace.runner({ sandboxUser: SANDBOX_USER, limits: { cpuSeconds: 1 } });

    const result = await runner.run({
      toolId: 'test:spin',
      scriptPath: 'cpu-spin.py',
      language: 'python',
      timeoutMs: 15_000,
    });

    expect(result.error).toMatchObject({ type: ScriptErrorType.SCRIPT, signal: 'SIGXCPU' });
    // The time limit would have made it a TimeoutError; the signal says which limit stopped it, no clock.
    expect(result.error?.message).toContain('CPU time limit');
  });
});
