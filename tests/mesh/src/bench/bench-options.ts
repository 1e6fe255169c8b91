/**
 * What `npm run bench` takes from its environment, read once here:
 * - BENCH_SCALE: multiplies every task count (default 1; e.g. 0.1 for a quick look, 3 for a steadier one);
 * - BENCH_REPEAT: passes per scenario, the table quoting the median of each number (default 3; 1 for a
 *   quicker, noisier run);
 * - BENCH_WARMUP: tasks of each workload and client in the warm-up before measuring (default 300; the
 *   long answer runs a tenth of it), so that the services run JIT-compiled code as a long-running
 *   service does, and not the interpreter's;
 * - BENCH_ONLY: comma-separated workloads and sections to run (e.g. `one-tool`, `paced`, `fan-out`);
 *   default all;
 * - BENCH_PACED_IN_FLIGHT: comma-separated counts of paced tasks in flight (default `100,500`);
 * - BENCH_PACED_SLOTS: the paced executor's MAX_CONCURRENT_TASKS: a number, `max` for the largest paced
 *   count in flight, or `default` (also when unset) for the executor's own default (512: a slot is held
 *   for a whole task, model waits included);
 * - BENCH_CPU_PROF: a directory; when set, gateway, assembler, executor and recall run with
 *   `--cpu-prof` and write their profiles under `<dir>/<service>/` when they stop, and the bench
 *   process profiles itself into `<dir>/bench/`. A relative path is taken from where `npm run` was
 *   typed (npm's INIT_CWD), not from the workspace npm switches to.
 */
import { isAbsolute, resolve } from 'node:path';

export interface BenchOptions {
  scale: number;
  repeat: number;
  cpuProfileDir: string | undefined;
  warmUpTasks: number;
  /** The workloads and sections to run; undefined: all. */
  only: readonly string[] | undefined;
  /** Paced tasks in flight, one scenario each. */
  pacedInFlight: readonly number[];
  /** MAX_CONCURRENT_TASKS of the paced executor; undefined: the executor's default. */
  pacedSlots: number | undefined;
}

export function benchOptions(env: Record<string, string | undefined> = process.env): BenchOptions {
  const scale = numberFrom(env, 'BENCH_SCALE', 1);
  if (!(scale > 0)) throw new Error(`BENCH_SCALE must be a positive number, got ${env['BENCH_SCALE']}`);
  const repeat = numberFrom(env, 'BENCH_REPEAT', 3);
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > 9) {
    throw new Error(`BENCH_REPEAT must be an integer from 1 to 9, got ${env['BENCH_REPEAT']}`);
  }
  const warmUpTasks = numberFrom(env, 'BENCH_WARMUP', 300);
  if (!Number.isInteger(warmUpTasks) || warmUpTasks < 0) {
    throw new Error(`BENCH_WARMUP must be a whole number of tasks, got ${env['BENCH_WARMUP']}`);
  }
  const only = env['BENCH_ONLY']
    ?.split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const pacedInFlight = (env['BENCH_PACED_IN_FLIGHT']?.trim() || '100,500').split(',').map((part) => {
    const count = Number(part.trim());
    if (!Number.isInteger(count) || count < 1) {
      throw new Error(
        `BENCH_PACED_IN_FLIGHT must list whole numbers above 0, got ${env['BENCH_PACED_IN_FLIGHT']}`,
      );
    }
    return count;
  });
  const slotsRaw = env['BENCH_PACED_SLOTS']?.trim();
  // The executor's default (512 slots) runs every paced count in flight as the issue asks: with defaults.
  let pacedSlots: number | undefined;
  if (slotsRaw === 'max') pacedSlots = Math.max(...pacedInFlight);
  else if (slotsRaw !== undefined && slotsRaw !== '' && slotsRaw !== 'default') {
    pacedSlots = Number(slotsRaw);
    if (!Number.isInteger(pacedSlots) || pacedSlots < 1) {
      throw new Error(
        `BENCH_PACED_SLOTS must be a whole number above 0, \`max\` or \`default\`, got ${slotsRaw}`,
      );
    }
  }
  const profile = env['BENCH_CPU_PROF']?.trim();
  const base = env['INIT_CWD'] ?? process.cwd();
  return {
    scale,
    repeat,
    cpuProfileDir: profile ? (isAbsolute(profile) ? profile : resolve(base, profile)) : undefined,
    warmUpTasks,
    only: only !== undefined && only.length > 0 ? only : undefined,
    pacedInFlight,
    pacedSlots,
  };
}

/** A task count scaled by BENCH_SCALE: at least one task, and at least `concurrency` to fill the workers. */
export function scaledTasks(base: number, scale: number, concurrency: number): number {
  return Math.max(concurrency, Math.round(base * scale), 1);
}

function numberFrom(env: Record<string, string | undefined>, name: string, fallback: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number, got ${JSON.stringify(raw)}`);
  return value;
}
