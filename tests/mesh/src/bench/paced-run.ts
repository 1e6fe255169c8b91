/**
 * One pass of the paced workload (issue 27): the scenario pass of scenario-run.ts (CPU by process, NATS
 * traffic, the client checks), and around it what the paced report needs — the client's times set
 * against the paced model's (time-to-first-token and end-to-end overhead, submission to the first model
 * request), in-progress acks counted apart, executor RSS per task in flight and gateway RSS per open
 * SSE stream (while all tasks of the pass are in flight, against the mesh at rest after the warm-up), and how
 * long the mesh takes to get back to its idle CPU after the load.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import type { BenchRow } from './bench-report.js';
import type { CpuMeter } from './cpu-meter.js';
import type { TaskOutcome } from './event-tally.js';
import {
  AckCounter,
  idleThresholdMsPerS,
  readRssBytes,
  secondsBackToIdle,
  type CpuRateSample,
} from './mesh-probes.js';
import { clockMs, fetchPacedTimings, taskOverheads, type ClientTimes } from './paced-workload.js';
import { runPass, type Probes, type ScenarioKind } from './scenario-run.js';
import { cell } from './bench-report.js';
import { median, percentile, round } from './stats.js';

export interface PacedMeasures {
  workload: string;
  client: string;
  in_flight: number;
  tasks: number;
  /** Client's first content delta − the model's first content byte. */
  ttft_overhead_p50_ms: number | null;
  ttft_overhead_p99_ms: number | null;
  /** Client's submission → terminal event, minus the model's and the tool's own time. */
  e2e_overhead_p50_ms: number | null;
  e2e_overhead_p99_ms: number | null;
  submit_to_model_p50_ms: number | null;
  submit_to_model_p99_ms: number | null;
  /** The rest of the e2e overhead by phase (paced-workload.ts taskOverheads), p50 and p99 each. */
  call_to_tool_p50_ms: number | null;
  call_to_tool_p99_ms: number | null;
  tool_to_model_p50_ms: number | null;
  tool_to_model_p99_ms: number | null;
  model_to_done_p50_ms: number | null;
  model_to_done_p99_ms: number | null;
  /** nats-server's messages in per task, and the in-progress acks among them. */
  nats_in_msgs_per_task: number | null;
  in_progress_acks_per_task: number | null;
  /** Other acks (task, work-queue) per task, among the messages in. */
  other_acks_per_task: number | null;
  /** Messages out per task, without this bench's own ack-counting subscription. */
  nats_out_msgs_per_task: number | null;
  /** (Executor RSS with every task of the pass in flight − at rest after the warm-up) / tasks in flight, in KiB. */
  executor_rss_kib_per_task: number | null;
  /** (Gateway RSS with every stream open − at rest after the warm-up) / open SSE streams, in KiB; SSE rows only. */
  gateway_rss_kib_per_stream: number | null;
  /** The mesh's CPU at rest before the paced runs, ms per second. */
  idle_ms_per_s: number | null;
  /** Seconds from the end of the load until the mesh held its idle CPU again for 2 s; null: not in 30 s. */
  idle_return_s: number | null;
}

export interface PacedPassTarget {
  workload: string;
  client: string;
  inFlight: number;
  tasks: number;
  kind: ScenarioKind;
  /** Runs task `key` (unique in the run); the client's outcome. */
  runTask: (key: string) => Promise<TaskOutcome>;
  /** Whether the client holds an SSE stream on the gateway per task. */
  sseStreams: boolean;
  /** Whether the mesh is involved (not the floor). */
  mesh: boolean;
  /** Wait after the load for the mesh to be back at its idle CPU (default true; the warm-up does not). */
  idleReturn?: boolean;
  /** Steady arrivals (scenario-run.ts): worker `w`'s first task waits `w` × this; none: all at once. */
  startSpacingMs?: number;
}

export interface PacedProbes extends Probes {
  meter: CpuMeter;
  nc: NatsConnection;
  pacedModelBaseUrl: string;
  executorPids: readonly number[];
  gatewayPid: number;
  /** The mesh's idle CPU, ms/s, measured before the paced runs. */
  idleMsPerS: number;
  /**
   * RSS in bytes of the executors and the gateway at rest after the warm-up, before any measured pass:
   * the base every pass's memory per task is taken from. (A reading just before each pass would miss
   * what the previous pass left grown — V8 keeps its heap — and so flatter every pass after the first.)
   */
  rssAtRest: { executor: number; gateway: number };
}

/** The executors' and the gateway's RSS now, in bytes. */
export function meshRss(
  executorPids: readonly number[],
  gatewayPid: number,
): { executor: number; gateway: number } {
  return {
    executor: executorPids.reduce((sum, pid) => sum + readRssBytes(pid), 0),
    gateway: readRssBytes(gatewayPid),
  };
}

const SAMPLE_MS = 250;
const IDLE_WAIT_MAX_MS = 30_000;
let passCounter = 0;

const pct = (values: readonly number[], p: number): number | null =>
  values.length === 0
    ? null
    : round(
        percentile(
          [...values].sort((a, b) => a - b),
          p,
        ),
      );

/** The mesh's CPU at rest: ms per second over `ms`. */
export async function idleCpuMsPerS(meter: CpuMeter, ms = 3_000): Promise<number> {
  const before = meter.snapshot();
  const started = performance.now();
  await sleep(ms);
  const after = meter.snapshot();
  return round((meter.meshMsBetween(before, after) / (performance.now() - started)) * 1000);
}

export async function runPacedPass(
  target: PacedPassTarget,
  probes: PacedProbes,
): Promise<{ row: BenchRow; paced: PacedMeasures }> {
  const tag = `${process.pid}-${++passCounter}`;
  const clients = new Map<string, ClientTimes>();
  let inFlight = 0;
  let loadEndedAt: number | undefined;
  let done = 0;

  const loaded: { executor: number; gateway: number }[] = [];
  const cpuSamples: CpuRateSample[] = [];
  let sampling = true;
  const acks = target.mesh ? new AckCounter(probes.nc) : undefined;
  await probes.meter.settle();
  const { executor: executorBefore, gateway: gatewayBefore } = probes.rssAtRest;
  const acksBefore = acks?.read();

  // Samples memory while the pass is full, and mesh CPU throughout and after it.
  const sampler = (async () => {
    let previous = probes.meter.snapshot();
    let previousAt = performance.now();
    while (sampling) {
      await sleep(SAMPLE_MS);
      const current = probes.meter.snapshot();
      const at = performance.now();
      cpuSamples.push({
        at,
        cpuMs: probes.meter.meshMsBetween(previous, current),
        intervalMs: at - previousAt,
      });
      previous = current;
      previousAt = at;
      if (inFlight === target.inFlight && target.mesh) {
        loaded.push(meshRss(probes.executorPids, probes.gatewayPid));
      }
    }
  })();

  const row = await runPass(
    {
      workload: target.workload,
      client: target.client,
      concurrency: target.inFlight,
      tasks: target.tasks,
      kind: target.kind,
      ...(target.startSpacingMs === undefined ? {} : { startSpacingMs: target.startSpacingMs }),
      runTask: async (i) => {
        const key = `${tag}.${i}`;
        const submitAt = clockMs();
        inFlight += 1;
        try {
          const outcome = await target.runTask(key);
          const doneAt = clockMs();
          clients.set(key, {
            submitAt,
            doneAt,
            firstChunkAt: outcome.firstChunkMs === undefined ? undefined : submitAt + outcome.firstChunkMs,
          });
          return outcome;
        } finally {
          inFlight -= 1;
          if (++done === target.tasks) loadEndedAt = performance.now();
        }
      },
    },
    probes,
  );
  const acksAfter = acks?.read();
  // Back to idle: keep sampling until the mesh held its idle rate for 2 s, or 30 s after the load.
  const threshold = idleThresholdMsPerS(probes.idleMsPerS);
  const endedAt = loadEndedAt ?? performance.now();
  let idleReturn: number | undefined;
  if (target.mesh && target.idleReturn !== false) {
    while (performance.now() - endedAt < IDLE_WAIT_MAX_MS) {
      idleReturn = secondsBackToIdle(cpuSamples, endedAt, threshold);
      if (idleReturn !== undefined) break;
      await sleep(SAMPLE_MS);
    }
  }
  sampling = false;
  await sampler;
  acks?.stop();

  const timings = await fetchPacedTimings(probes.pacedModelBaseUrl, [...clients.keys()]);
  const ttft: number[] = [];
  const e2e: number[] = [];
  const toModel: number[] = [];
  const callToTool: number[] = [];
  const toolToModel: number[] = [];
  const modelToDone: number[] = [];
  const add = (values: number[], value: number | undefined): void => {
    if (value !== undefined) values.push(value);
  };
  for (const [key, client] of clients) {
    const overheads = taskOverheads(client, timings.get(key));
    add(ttft, overheads.ttftOverheadMs);
    add(e2e, overheads.e2eOverheadMs);
    add(toModel, overheads.submitToModelMs);
    add(callToTool, overheads.callToToolMs);
    add(toolToModel, overheads.toolToModelMs);
    add(modelToDone, overheads.modelToDoneMs);
  }
  const perTask = (value: number): number => round(value / target.tasks);
  const ackProgress = acksBefore && acksAfter ? acksAfter.progress - acksBefore.progress : undefined;
  const ackOther = acksBefore && acksAfter ? acksAfter.other - acksBefore.other : undefined;
  const loadedExecutor = loaded.length > 0 ? median(loaded.map((s) => s.executor)) : undefined;
  const loadedGateway = loaded.length > 0 ? median(loaded.map((s) => s.gateway)) : undefined;
  const paced: PacedMeasures = {
    workload: target.workload,
    client: target.client,
    in_flight: target.inFlight,
    tasks: target.tasks,
    ttft_overhead_p50_ms: pct(ttft, 50),
    ttft_overhead_p99_ms: pct(ttft, 99),
    e2e_overhead_p50_ms: pct(e2e, 50),
    e2e_overhead_p99_ms: pct(e2e, 99),
    submit_to_model_p50_ms: target.mesh ? pct(toModel, 50) : null,
    submit_to_model_p99_ms: target.mesh ? pct(toModel, 99) : null,
    call_to_tool_p50_ms: pct(callToTool, 50),
    call_to_tool_p99_ms: pct(callToTool, 99),
    tool_to_model_p50_ms: pct(toolToModel, 50),
    tool_to_model_p99_ms: pct(toolToModel, 99),
    model_to_done_p50_ms: pct(modelToDone, 50),
    model_to_done_p99_ms: pct(modelToDone, 99),
    nats_in_msgs_per_task: row.nats_per_task?.in_msgs ?? null,
    in_progress_acks_per_task: ackProgress === undefined ? null : perTask(ackProgress),
    other_acks_per_task: ackOther === undefined ? null : perTask(ackOther),
    nats_out_msgs_per_task:
      row.nats_per_task && ackProgress !== undefined && ackOther !== undefined
        ? round(row.nats_per_task.out_msgs - (ackProgress + ackOther) / target.tasks)
        : null,
    executor_rss_kib_per_task:
      loadedExecutor === undefined ? null : round((loadedExecutor - executorBefore) / 1024 / target.inFlight),
    gateway_rss_kib_per_stream:
      loadedGateway === undefined || !target.sseStreams
        ? null
        : round((loadedGateway - gatewayBefore) / 1024 / target.inFlight),
    idle_ms_per_s: target.mesh ? probes.idleMsPerS : null,
    idle_return_s: target.mesh ? (idleReturn === undefined ? null : round(idleReturn)) : null,
  };
  return { row, paced };
}

/** The median of each paced number over the passes of one scenario. */
export function medianOfPacedPasses(passes: readonly PacedMeasures[]): PacedMeasures {
  const [first] = passes;
  if (!first) throw new Error('no paced pass to take the median of');
  const of = (pick: (m: PacedMeasures) => number | null): number | null => {
    const values = passes.map(pick).filter((value): value is number => value !== null);
    return values.length === 0 ? null : round(median(values));
  };
  return {
    workload: first.workload,
    client: first.client,
    in_flight: first.in_flight,
    tasks: first.tasks,
    ttft_overhead_p50_ms: of((m) => m.ttft_overhead_p50_ms),
    ttft_overhead_p99_ms: of((m) => m.ttft_overhead_p99_ms),
    e2e_overhead_p50_ms: of((m) => m.e2e_overhead_p50_ms),
    e2e_overhead_p99_ms: of((m) => m.e2e_overhead_p99_ms),
    submit_to_model_p50_ms: of((m) => m.submit_to_model_p50_ms),
    submit_to_model_p99_ms: of((m) => m.submit_to_model_p99_ms),
    call_to_tool_p50_ms: of((m) => m.call_to_tool_p50_ms),
    call_to_tool_p99_ms: of((m) => m.call_to_tool_p99_ms),
    tool_to_model_p50_ms: of((m) => m.tool_to_model_p50_ms),
    tool_to_model_p99_ms: of((m) => m.tool_to_model_p99_ms),
    model_to_done_p50_ms: of((m) => m.model_to_done_p50_ms),
    model_to_done_p99_ms: of((m) => m.model_to_done_p99_ms),
    nats_in_msgs_per_task: of((m) => m.nats_in_msgs_per_task),
    in_progress_acks_per_task: of((m) => m.in_progress_acks_per_task),
    other_acks_per_task: of((m) => m.other_acks_per_task),
    nats_out_msgs_per_task: of((m) => m.nats_out_msgs_per_task),
    executor_rss_kib_per_task: of((m) => m.executor_rss_kib_per_task),
    gateway_rss_kib_per_stream: of((m) => m.gateway_rss_kib_per_stream),
    idle_ms_per_s: of((m) => m.idle_ms_per_s),
    // A pass that never got back to idle (null) must not vanish from the median: it counts as the worst.
    idle_return_s: passes.some((m) => m.idle_return_s === null && m.idle_ms_per_s !== null)
      ? null
      : of((m) => m.idle_return_s),
  };
}

/** The paced measures as a markdown table, one row per client and count in flight. */
export function renderPaced(measures: readonly PacedMeasures[]): string {
  const header = [
    'workload',
    'client',
    'in flight',
    'tasks',
    'TTFT overhead p50 / p99 ms',
    'e2e overhead p50 / p99 ms',
    'submit → model p50 / p99 ms',
    'call → tool p50 / p99 ms',
    'tool → model p50 / p99 ms',
    'model end → done p50 / p99 ms',
    'NATS msgs in / task',
    'in-progress acks / task',
    'other acks / task',
    'msgs out / task',
    'executor KiB / task',
    'gateway KiB / stream',
    'idle ms/s',
    'back to idle s',
  ];
  const pair = (a: number | null, b: number | null): string =>
    a === null && b === null ? '—' : `${cell(a)} / ${cell(b)}`;
  const body = measures.map((m) => [
    m.workload,
    m.client,
    String(m.in_flight),
    String(m.tasks),
    pair(m.ttft_overhead_p50_ms, m.ttft_overhead_p99_ms),
    pair(m.e2e_overhead_p50_ms, m.e2e_overhead_p99_ms),
    pair(m.submit_to_model_p50_ms, m.submit_to_model_p99_ms),
    pair(m.call_to_tool_p50_ms, m.call_to_tool_p99_ms),
    pair(m.tool_to_model_p50_ms, m.tool_to_model_p99_ms),
    pair(m.model_to_done_p50_ms, m.model_to_done_p99_ms),
    cell(m.nats_in_msgs_per_task),
    cell(m.in_progress_acks_per_task),
    cell(m.other_acks_per_task),
    cell(m.nats_out_msgs_per_task),
    cell(m.executor_rss_kib_per_task),
    cell(m.gateway_rss_kib_per_stream),
    cell(m.idle_ms_per_s),
    m.idle_ms_per_s === null ? '—' : m.idle_return_s === null ? '> 30' : cell(m.idle_return_s),
  ]);
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`,
    ...body.map((cells) => `| ${cells.join(' | ')} |`),
    '',
    'TTFT overhead = the client’s first content delta − the model’s first content byte; e2e overhead = the',
    'client’s submission → terminal event minus the model’s and the tool’s own time (each request in → last',
    'byte out), in phases: submit → model (the first model request), call → tool (the tool-call turn’s last byte →',
    'the tool’s request), tool → model (the tool’s answer → the answer turn’s request), model end → done (the',
    'answer’s last byte → the client’s terminal event); CPU per task and × own floor are in the scenario table above (workload `paced`).',
  ].join('\n');
}
