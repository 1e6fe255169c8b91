import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@agentmesh/runtime';
import { waitFor } from '@agentmesh/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { watchToolDirectory, WatchMode, type ToolDirectoryWatch } from './tool-directory-watcher.js';

let root: string;
let dir: string;
let watch: ToolDirectoryWatch | undefined;
const logLines: string[] = [];
const log = createLogger({
  service: 'assembler',
  level: 'debug',
  destination: { write: (line: string) => void logLines.push(line) },
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'assembler-watch-'));
  dir = join(root, 'tools');
  await mkdir(dir);
  logLines.length = 0;
});
afterEach(async () => {
  await watch?.stop();
  watch = undefined;
  await rm(root, { recursive: true, force: true });
});

/** A stand-in for the registry sync: records what each run found in the directory. */
function recordingSync(target = () => dir) {
  const runs: Record<string, string>[] = [];
  let active = 0;
  let mostAtOnce = 0;
  const sync = async (): Promise<void> => {
    active++;
    mostAtOnce = Math.max(mostAtOnce, active);
    try {
      const files: Record<string, string> = {};
      const entries = await readdir(target(), { recursive: true }).catch(() => []);
      for (const entry of entries.filter((name) => name.endsWith('.json')).sort()) {
        files[entry] = await readFile(join(target(), entry), 'utf8').catch(() => '(gone)');
      }
      runs.push(files);
    } finally {
      active--;
    }
  };
  return { sync, runs, mostAtOnce: () => mostAtOnce, last: () => runs.at(-1) };
}

describe('watching a tool directory', () => {
  it('the first run happens before the watch resolves; files added, edited and deleted later, also in new sub-directories, each lead to a run that sees them', async () => {
    await writeFile(join(dir, 'a.tool.json'), '"a1"');
    const recorder = recordingSync();
    watch = await watchToolDirectory({ dir, debounceMs: 20, sync: recorder.sync, log });
    expect(watch.mode).toBe(WatchMode.EVENTS);
    expect(recorder.runs).toEqual([{ 'a.tool.json': '"a1"' }]);

    await mkdir(join(dir, 'team/scripts'), { recursive: true });
    await writeFile(join(dir, 'team/scripts/b.tool.json'), '"b1"');
    await waitFor(() => recorder.last()?.['team/scripts/b.tool.json'] === '"b1"', { timeoutMs: 5_000 });

    await writeFile(join(dir, 'a.tool.json'), '"a2"');
    await waitFor(() => recorder.last()?.['a.tool.json'] === '"a2"', { timeoutMs: 5_000 });

    await rm(join(dir, 'team'), { recursive: true });
    await waitFor(() => recorder.last()?.['team/scripts/b.tool.json'] === undefined, { timeoutMs: 5_000 });
    expect(recorder.last()).toEqual({ 'a.tool.json': '"a2"' });
  });

  it('a burst of writes is debounced and runs never overlap, even when a run is slow', async () => {
    const recorder = recordingSync();
    let slow = true;
    const sync = async (): Promise<void> => {
      await recorder.sync();
      // A registry that answers slowly: changes keep arriving while a run is in progress.
      if (slow) await new Promise((resolve) => setTimeout(resolve, 30));
    };
    watch = await watchToolDirectory({ dir, debounceMs: 100, sync, log });
    const startRuns = recorder.runs.length;

    for (let i = 1; i <= 20; i++) await writeFile(join(dir, `t${i % 3}.tool.json`), `"${i}"`);
    slow = false;

    await waitFor(() => recorder.last()?.['t2.tool.json'] === '"20"', { timeoutMs: 5_000 });
    expect(recorder.mostAtOnce()).toBe(1);
    expect(recorder.runs.length - startRuns).toBeLessThan(20);
  });

  it('with a poll interval, changes are found by polling', async () => {
    const recorder = recordingSync();
    watch = await watchToolDirectory({ dir, debounceMs: 0, pollMs: 50, sync: recorder.sync, log });
    expect(watch.mode).toBe(WatchMode.POLLING);

    await writeFile(join(dir, 'c.tool.json'), '"c1"');
    await waitFor(() => recorder.last()?.['c.tool.json'] === '"c1"', { timeoutMs: 5_000 });
    await writeFile(join(dir, 'c.tool.json'), '"c2 longer"');
    await waitFor(() => recorder.last()?.['c.tool.json'] === '"c2 longer"', { timeoutMs: 5_000 });
    await rm(join(dir, 'c.tool.json'));
    await waitFor(() => recorder.last()?.['c.tool.json'] === undefined, { timeoutMs: 5_000 });
  });

  it('a directory that does not exist yet is polled, with a warning, and its files are found once it is created', async () => {
    const later = join(root, 'later');
    const recorder = recordingSync(() => later);
    watch = await watchToolDirectory({ dir: later, debounceMs: 0, sync: recorder.sync, log });

    expect(watch.mode).toBe(WatchMode.POLLING);
    expect(logLines.some((line) => line.includes('tools directory does not exist (yet); polling it'))).toBe(
      true,
    );
    await mkdir(later);
    await writeFile(join(later, 'd.tool.json'), '"d1"');
    await waitFor(() => recorder.last()?.['d.tool.json'] === '"d1"', { timeoutMs: 10_000 });
  });

  it('when the watched directory is removed, the watch switches to polling and finds it again when it is re-created', async () => {
    const recorder = recordingSync();
    watch = await watchToolDirectory({ dir, debounceMs: 0, sync: recorder.sync, log });
    expect(watch.mode).toBe(WatchMode.EVENTS);

    await rm(dir, { recursive: true });
    await waitFor(() => watch?.mode === WatchMode.POLLING, { timeoutMs: 5_000 });
    await mkdir(dir);
    await writeFile(join(dir, 'e.tool.json'), '"e1"');
    await waitFor(() => recorder.last()?.['e.tool.json'] === '"e1"', { timeoutMs: 10_000 });
  });

  it('a failing first run fails the start; a failing later run is logged and retried', async () => {
    await expect(
      watchToolDirectory({ dir, debounceMs: 0, sync: () => Promise.reject(new Error('registry down')), log }),
    ).rejects.toThrow('registry down');

    let failures = 1;
    const recorder = recordingSync();
    const sync = async (): Promise<void> => {
      if (recorder.runs.length > 0 && failures-- > 0) throw new Error('registry briefly down');
      await recorder.sync();
    };
    watch = await watchToolDirectory({ dir, debounceMs: 0, retryAfterFailureMs: 50, sync, log });
    await writeFile(join(dir, 'f.tool.json'), '"f1"');

    await waitFor(() => recorder.last()?.['f.tool.json'] === '"f1"', { timeoutMs: 5_000 });
    expect(logLines.some((line) => line.includes('tool registry sync failed; retrying'))).toBe(true);
  });
});
