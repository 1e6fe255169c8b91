/**
 * CPU profiles of a bench run (BENCH_CPU_PROF): each service gets `--cpu-prof` through NODE_OPTIONS and
 * writes a `.cpuprofile` into its own directory when it exits (the harness stops services with SIGTERM,
 * and they exit cleanly, so the profile is written); the bench process profiles itself through the
 * inspector, since its own flags are fixed by the time it reads the environment.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { renderProfileSummaries, summarizeCpuProfile, type CpuProfile } from './profile-summary.js';

/** The environment that makes a service write its CPU profile under `<dir>/<service>/`. */
export function cpuProfileEnv(dir: string | undefined, service: string): Record<string, string> {
  if (dir === undefined) return {};
  const serviceDir = join(dir, service);
  mkdirSync(serviceDir, { recursive: true });
  return { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir="${serviceDir}"` };
}

/** Starts profiling this process; the returned function stops and writes `<dir>/bench/bench-<time>.cpuprofile`. */
export async function profileThisProcess(dir: string): Promise<() => Promise<string>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    const benchDir = join(dir, 'bench');
    mkdirSync(benchDir, { recursive: true });
    const file = join(benchDir, `bench-${new Date().toISOString().replaceAll(':', '-')}.cpuprofile`);
    writeFileSync(file, JSON.stringify(profile));
    return file;
  };
}

/** Every `.cpuprofile` under `dir`, one directory level deep, as `<service>/<file>`. */
export function listCpuProfiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .flatMap((entry) =>
      readdirSync(join(dir, entry.name))
        .filter((file) => file.endsWith('.cpuprofile'))
        .map((file) => `${entry.name}/${file}`),
    )
    .sort();
}

/** Where each profiled process's busy CPU went (profile-summary.ts), as markdown: one section per file. */
export function summarizeCpuProfiles(dir: string, top = 15): string {
  return renderProfileSummaries(
    listCpuProfiles(dir).map((file) => ({
      process: file,
      summary: summarizeCpuProfile(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, top),
    })),
  );
}
