/**
 * One pass of one scenario: `tasks` tasks run by `concurrency` workers, each task timed from submission
 * to its terminal event; around the pass, CPU by process and nats-server's traffic counters. The mesh is
 * let settle before and after, so work a task leaves behind (acks, status writes) lands in its own pass.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchRow } from './bench-report.js';
import { ProcessName, type CpuByProcess, type CpuMeter } from './cpu-meter.js';
import type { TaskOutcome } from './event-tally.js';
import { readVarz, trafficPerTask } from './nats-varz.js';
import { median, round, summarise } from './stats.js';

export interface Scenario {
  workload: string;
  client: string;
  concurrency: number;
  tasks: number;
  runTask: (i: number) => Promise<TaskOutcome>;
  kind: ScenarioKind;
  /**
   * Worker `w` submits its first task `w` × this many ms after the pass starts (steady arrivals: the
   * workers' tasks spread over time instead of starting in one burst). None: every worker starts at once.
   */
  startSpacingMs?: number;
}

export const ScenarioKind = {
  /** The in-process loop: charged with the bench process's CPU and the mocks'; no NATS, no events, only chunks. */
  floor: 'floor',
  /** A task through the mesh: every process, NATS traffic, events and chunks at the client. */
  meshTask: 'mesh-task',
  /** A request/reply over NATS (recall): every process and NATS traffic; no events. */
  request: 'request',
} as const;
export type ScenarioKind = (typeof ScenarioKind)[keyof typeof ScenarioKind];

export interface Probes {
  meter: CpuMeter;
  natsMonitorUrl: string;
  /** Where failures are told, loudly. */
  report: (line: string) => void;
}

const MAX_FAILURES_TOLD = 3;

export async function runPass(scenario: Scenario, probes: Probes): Promise<BenchRow> {
  const latencies: number[] = [];
  const firstChunks: number[] = [];
  let events = 0;
  let chunks = 0;
  let failed = 0;
  let next = 0;

  const usesNats = scenario.kind !== ScenarioKind.floor;
  await probes.meter.settle();
  const trafficBefore = usesNats ? await readVarz(probes.natsMonitorUrl) : undefined;
  const cpuBefore = probes.meter.snapshot();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: scenario.concurrency }, async (_, worker) => {
      if (scenario.startSpacingMs !== undefined) await sleep(worker * scenario.startSpacingMs);
      while (next < scenario.tasks) {
        const i = next++;
        const t0 = performance.now();
        let outcome: TaskOutcome;
        try {
          outcome = await scenario.runTask(i);
        } catch (error) {
          outcome = {
            failure: error instanceof Error ? error.message : String(error),
            events: 0,
            messageChunks: 0,
            firstChunkMs: undefined,
          };
        }
        latencies.push(performance.now() - t0);
        events += outcome.events;
        chunks += outcome.messageChunks;
        if (outcome.firstChunkMs !== undefined) firstChunks.push(outcome.firstChunkMs);
        if (outcome.failure !== undefined) {
          failed += 1;
          if (failed <= MAX_FAILURES_TOLD) {
            probes.report(
              `FAILED ${scenario.workload} / ${scenario.client} / C=${scenario.concurrency}, task ${i}: ${outcome.failure}`,
            );
          }
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await probes.meter.settle();
  const cpuAfter = probes.meter.snapshot();
  const trafficAfter = usesNats ? await readVarz(probes.natsMonitorUrl) : undefined;
  if (failed > MAX_FAILURES_TOLD) probes.report(`… ${failed} tasks FAILED in all in this pass`);

  const window = probes.meter.between(cpuBefore, cpuAfter);
  const counted =
    scenario.kind === ScenarioKind.floor
      ? [ProcessName.bench, ProcessName.mocks]
      : Object.values(ProcessName);
  const cpu: CpuByProcess = {};
  let total = 0;
  for (const name of counted) {
    const ms = window.byProcess[name];
    if (ms === undefined) continue;
    cpu[name] = round(ms / scenario.tasks);
    total += ms;
  }
  const latency = summarise(latencies);
  return {
    workload: scenario.workload,
    client: scenario.client,
    concurrency: scenario.concurrency,
    tasks: scenario.tasks,
    passes: 1,
    failed,
    tasks_per_s: round((scenario.tasks - failed) / seconds),
    p50_ms: latency.p50_ms,
    p99_ms: latency.p99_ms,
    mean_ms: latency.mean_ms,
    first_chunk_p50_ms: firstChunks.length > 0 ? round(median(firstChunks)) : null,
    events_per_task: scenario.kind === ScenarioKind.meshTask ? round(events / scenario.tasks) : null,
    message_chunks_per_task: scenario.kind === ScenarioKind.request ? null : round(chunks / scenario.tasks),
    cpu_ms_per_task: cpu,
    cpu_total_ms_per_task: round(total / scenario.tasks),
    cpu_own_ms_per_task: round((total - (window.byProcess.mocks ?? 0)) / scenario.tasks),
    x_floor: null,
    x_own_floor: null,
    machine_cpu_ms_per_task: window.machineMs === undefined ? null : round(window.machineMs / scenario.tasks),
    nats_per_task:
      trafficBefore && trafficAfter
        ? roundTraffic(trafficPerTask(trafficBefore, trafficAfter, scenario.tasks))
        : null,
  };
}

function roundTraffic(traffic: ReturnType<typeof trafficPerTask>): ReturnType<typeof trafficPerTask> {
  return {
    in_msgs: round(traffic.in_msgs),
    out_msgs: round(traffic.out_msgs),
    in_bytes: round(traffic.in_bytes),
    out_bytes: round(traffic.out_bytes),
  };
}
