import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cpuProfileEnv, listCpuProfiles } from './cpu-profiles.js';

describe('CPU profiles of the services', () => {
  const dirs: string[] = [];
  afterEach(() => dirs.splice(0).forEach((dir) => rmSync(dir, { recursive: true, force: true })));
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'bench prof '));
    dirs.push(dir);
    return dir;
  };

  it('without a profile directory, a service gets no extra environment', () => {
    expect(cpuProfileEnv(undefined, 'gateway')).toEqual({});
  });

  it('a node process given the env and stopped with SIGTERM writes its profile under <dir>/<service>', async () => {
    const dir = tempDir();
    // Like a service: runs until SIGTERM, then exits cleanly (a path with spaces, to check the quoting).
    const child = spawn(
      process.execPath,
      [
        '-e',
        "process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000); console.log('ready')",
      ],
      {
        env: { PATH: process.env.PATH ?? '', ...cpuProfileEnv(dir, 'executor') },
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    );
    const closed = once(child, 'close');
    // Ready, or gone already (a refused NODE_OPTIONS ends it at start-up).
    await Promise.race([once(child.stdout!, 'data'), closed]);
    child.kill('SIGTERM');
    await closed;
    const profiles = listCpuProfiles(dir);
    expect(profiles).toHaveLength(1);
    expect(profiles[0]).toMatch(/^executor\/CPU\..*\.cpuprofile$/);
  });
});
