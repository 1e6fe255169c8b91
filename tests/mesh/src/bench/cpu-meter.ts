/**
 * CPU per process over a window of the bench: each mesh process and the mocks' process from /proc (see
 * process-cpu.ts), the bench process itself from `process.cpuUsage()` (it is the client, and runs the
 * floor's loop), and the whole machine from /proc/stat.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { machineBusyCpuMs } from './machine-cpu.js';
import { cpuMsBetween, sampleProcessCpu, type ProcessCpuSample } from './process-cpu.js';

/** Columns of the CPU breakdown, in table order. `bench` is this process: the client (and the floor's loop); `mocks` the mocks' process. */
export const ProcessName = {
  nats: 'nats-server',
  gateway: 'gateway',
  assembler: 'assembler',
  executor: 'executor',
  recall: 'recall',
  bench: 'bench',
  /** The mocks' child process (bench-mocks.ts): scripted models and tool APIs. */
  mocks: 'mocks',
} as const;
export type ProcessName = (typeof ProcessName)[keyof typeof ProcessName];

export type CpuByProcess = Partial<Record<ProcessName, number>>;

/** The processes outside this one: a name (a column) and the pids summed into it (several executors). */
export type WatchedProcesses = Partial<Record<Exclude<ProcessName, 'bench'>, readonly number[]>>;

export interface CpuSnapshot {
  processes: Map<string, ProcessCpuSample[]>;
  self: NodeJS.CpuUsage;
  machineMs: number | undefined;
}

export interface CpuWindow {
  /** ms of CPU per process in the window. */
  byProcess: CpuByProcess;
  /** ms of busy CPU of the whole machine (every process, background work included), when /proc/stat exists. */
  machineMs: number | undefined;
}

export class CpuMeter {
  constructor(
    private readonly watched: WatchedProcesses,
    private readonly ticksPerSecond: number,
  ) {}

  snapshot(): CpuSnapshot {
    const processes = new Map<string, ProcessCpuSample[]>();
    for (const [name, pids] of Object.entries(this.watched)) {
      processes.set(
        name,
        pids.map((pid) => sampleProcessCpu(pid)),
      );
    }
    return { processes, self: process.cpuUsage(), machineMs: machineBusyCpuMs(this.ticksPerSecond) };
  }

  between(before: CpuSnapshot, after: CpuSnapshot): CpuWindow {
    const byProcess: CpuByProcess = {};
    for (const [name, samples] of after.processes) {
      const earlier = before.processes.get(name) ?? [];
      byProcess[name as ProcessName] = samples.reduce(
        (sum, sample, i) => sum + (earlier[i] ? cpuMsBetween(earlier[i], sample, this.ticksPerSecond) : 0),
        0,
      );
    }
    byProcess.bench = (after.self.user - before.self.user + after.self.system - before.self.system) / 1000;
    const machineMs =
      before.machineMs === undefined || after.machineMs === undefined
        ? undefined
        : after.machineMs - before.machineMs;
    return { byProcess, machineMs };
  }

  /**
   * Waits until the mesh processes are idle (under `quietMs` of CPU in one `intervalMs`), at most `maxMs`:
   * work a scenario leaves behind (acks, status writes, closing streams) is counted in its window, and not
   * in the next scenario's.
   */
  async settle({ intervalMs = 100, quietMs = 3, maxMs = 3_000 } = {}): Promise<void> {
    const deadline = performance.now() + maxMs;
    let previous = this.snapshot();
    while (performance.now() < deadline) {
      await sleep(intervalMs);
      const current = this.snapshot();
      if (this.meshMsBetween(previous, current) < quietMs) return;
      previous = current;
    }
  }

  /** Mesh CPU (every watched process but the bench's and the mocks') between two snapshots, in ms. */
  meshMsBetween(before: CpuSnapshot, after: CpuSnapshot): number {
    const { byProcess } = this.between(before, after);
    return Object.entries(byProcess)
      .filter(([name]) => name !== ProcessName.bench && name !== ProcessName.mocks)
      .reduce((sum, [, ms]) => sum + (ms ?? 0), 0);
  }
}
