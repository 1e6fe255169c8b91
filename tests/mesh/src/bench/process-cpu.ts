/**
 * CPU time of one process (all its threads), read from /proc, so the bench can say what each mesh
 * process — every service, and nats-server in its container — spends per task.
 *
 * Two sources, because neither alone is right in every case:
 * - `/proc/<pid>/task/<tid>/schedstat`, summed over the threads: nanoseconds on CPU, but only of the
 *   threads alive at the moment of reading (`/proc/<pid>/schedstat` alone is the main thread only);
 * - `/proc/<pid>/stat` utime + stime: the whole thread group including threads that have exited, but
 *   in clock ticks (`getconf CLK_TCK`, 10 ms on Linux).
 * A window's CPU is the schedstat difference unless the tick figure says more was spent (a thread
 * exited in between, taking its time out of the schedstat sum), then the tick figure.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessCpuSample {
  /** Summed schedstat of the live threads, in ns; undefined where schedstat is not available. */
  threadsNs: number | undefined;
  /** utime + stime of the thread group, in clock ticks. */
  ticks: number;
}

/** utime + stime (fields 14 and 15) of a /proc/<pid>/stat line; the command name may hold spaces and parens. */
export function parseStatCpuTicks(stat: string): number {
  const afterName = stat
    .slice(stat.lastIndexOf(')') + 2)
    .trim()
    .split(/\s+/);
  // afterName[0] is field 3 (state), so field n is afterName[n - 3].
  const utime = Number(afterName[11]);
  const stime = Number(afterName[12]);
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) {
    throw new Error(`not a /proc/<pid>/stat line: ${JSON.stringify(stat.slice(0, 120))}`);
  }
  return utime + stime;
}

/** Nanoseconds on CPU: the first field of a /proc/.../schedstat line. */
export function parseSchedstatNs(schedstat: string): number {
  const ns = Number(schedstat.trim().split(/\s+/)[0]);
  if (!Number.isFinite(ns))
    throw new Error(`not a schedstat line: ${JSON.stringify(schedstat.slice(0, 80))}`);
  return ns;
}

/**
 * Milliseconds of CPU between two samples. The schedstat difference is exact for threads that lived
 * through the window; the tick difference is the truth to within one tick per reading (the kernel
 * reports the precise runtime truncated to ticks). So the tick figure wins only when it exceeds the
 * schedstat one by more than that rounding can explain.
 */
export function cpuMsBetween(
  before: ProcessCpuSample,
  after: ProcessCpuSample,
  ticksPerSecond: number,
): number {
  const tickMs = 1000 / ticksPerSecond;
  const fromTicks = (after.ticks - before.ticks) * tickMs;
  if (before.threadsNs === undefined || after.threadsNs === undefined) return fromTicks;
  const fromThreads = (after.threadsNs - before.threadsNs) / 1e6;
  return fromTicks - fromThreads > 2 * tickMs ? fromTicks : fromThreads;
}

/** One reading of a process; throws when the process is gone. */
export function sampleProcessCpu(pid: number): ProcessCpuSample {
  const ticks = parseStatCpuTicks(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  let threadsNs: number | undefined = 0;
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        threadsNs += parseSchedstatNs(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8'));
      } catch (error) {
        // A thread that exited between listing and reading: its time is in the tick figure.
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  } catch {
    threadsNs = undefined;
  }
  return { threadsNs, ticks };
}

/** USER_HZ from `getconf CLK_TCK`; 100 (what Linux uses everywhere) when getconf is missing. */
export function clockTicksPerSecond(): number {
  try {
    const value = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(value) && value > 0 ? value : 100;
  } catch {
    return 100;
  }
}
