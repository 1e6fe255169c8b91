/**
 * Issue 27's targets as `npm run bench` reports them: each with the value measured in this run, the
 * goal, and whether it is met. Reports only: nothing here sets the exit code. A target whose numbers
 * were not measured in this run (BENCH_ONLY) is shown as not measured rather than left out.
 */
import type { BenchRow } from './bench-report.js';
import type { FanOutResult } from './fan-out.js';
import type { PacedMeasures } from './paced-run.js';
import { cell } from './bench-report.js';

export const Met = { yes: 'met', no: 'NOT MET', reported: 'reported', missing: 'not measured' } as const;
export type Met = (typeof Met)[keyof typeof Met];

export interface TargetLine {
  target: string;
  measured: string;
  goal: string;
  met: Met;
}

/** Client names of the rows the targets read. */
export const TargetClient = {
  sse: 'SSE',
  nats: 'NATS',
  sseDefaultSlots: 'SSE, default slots',
  natsDefaultSlots: 'NATS, default slots',
} as const;

export interface TargetInputs {
  /** Every row of the run, ratios set (withFloorRatios). */
  rows: readonly BenchRow[];
  /** The paced measures per (client, in flight); the floor's too. */
  paced: readonly PacedMeasures[];
  fanOut: FanOutResult | undefined;
  /** Documents the converter bench passed, out of how many; undefined when it did not run. */
  converter: { passed: number; total: number } | undefined;
  /** Adapters' CPU per delta, µs; undefined when not run. */
  adapters: readonly { adapter: string; us_per_delta: number }[] | undefined;
  /** The paced workload's name in the rows (tasks in waves). */
  pacedWorkload: string;
  /** The same workload with steady arrivals; its latency targets are reported beside the waves'. */
  pacedSteadyWorkload?: string;
}

const PACED_CPU_RATIO = 3;
const TTFT_P99_MS = 25;
const E2E_P99_MS = 50;
const KIB_PER_TASK = 64;
const IDLE_RETURN_S = 10;
const FAN_OUT_FOLLOWERS = 2_000;
/** "A handful" of JetStream consumers for the fan-out's followers. */
const FAN_OUT_CONSUMERS = 5;

const metIf = (ok: boolean): Met => (ok ? Met.yes : Met.no);

/** Several measured values (one per scenario) against one bound: met when every one is within it. */
function bounded(
  target: string,
  goal: string,
  values: readonly { label: string; value: number | null }[],
  bound: number,
  unit = '',
): TargetLine {
  const present = values.filter((v): v is { label: string; value: number } => v.value !== null);
  if (present.length === 0) return { target, measured: '—', goal, met: Met.missing };
  return {
    target,
    measured: values
      .map((v) => `${v.label} ${cell(v.value)}${v.value === null ? '' : unit}`.trim())
      .join('; '),
    goal,
    met: metIf(present.length === values.length && present.every((v) => v.value <= bound)),
  };
}

export function issue27Targets(inputs: TargetInputs): TargetLine[] {
  const { rows } = inputs;
  const find = (workload: string, client: string, concurrency: number): BenchRow | undefined =>
    rows.find((r) => r.workload === workload && r.client === client && r.concurrency === concurrency);
  const lines: TargetLine[] = [];

  for (const [c, bound] of [
    [64, 4],
    [1, 10],
  ] as const) {
    for (const client of [TargetClient.sse, TargetClient.nats]) {
      const row = find('one-tool', client, c);
      lines.push(
        bounded(
          `one-tool, ${client} client, C=${c}: total CPU per task × the floor's own`,
          `≤ ${bound}×`,
          [{ label: '', value: row?.x_own_floor ?? null }],
          bound,
          '×',
        ),
      );
    }
  }
  for (const [client, defaultClient] of [
    [TargetClient.sse, TargetClient.sseDefaultSlots],
    [TargetClient.nats, TargetClient.natsDefaultSlots],
  ] as const) {
    const slots = find('one-tool', client, 64);
    const defaults = find('one-tool', defaultClient, 64);
    lines.push(
      slots && defaults
        ? {
            target: `backlog: one-tool, ${client}, 64 clients on default slots vs 64 slots (own CPU ms/task)`,
            measured: `${cell(defaults.cpu_own_ms_per_task)} vs ${cell(slots.cpu_own_ms_per_task)}`,
            goal: 'no more',
            // Noise of a few per cent on a shared machine is not a backlog cost.
            met: metIf(defaults.cpu_own_ms_per_task <= slots.cpu_own_ms_per_task * 1.05),
          }
        : {
            target: `backlog: one-tool, ${client}, 64 clients on default slots vs 64 slots`,
            measured: '—',
            goal: 'no more',
            met: Met.missing,
          },
    );
  }

  const meshPaced = inputs.paced.filter(
    (p) => p.idle_ms_per_s !== null && p.workload === inputs.pacedWorkload,
  );
  const meshSteady = inputs.paced.filter(
    (p) => p.idle_ms_per_s !== null && p.workload === inputs.pacedSteadyWorkload,
  );
  const label = (p: PacedMeasures): string => `${p.client} ${p.in_flight}:`;
  const pacedValues = (pick: (p: PacedMeasures) => number | null) =>
    meshPaced.map((p) => ({ label: label(p), value: pick(p) }));
  const pacedRow = (p: PacedMeasures): BenchRow | undefined =>
    find(inputs.pacedWorkload, p.client, p.in_flight);
  lines.push(
    bounded(
      'paced: CPU per task over every process × the paced floor’s own',
      `≤ ${PACED_CPU_RATIO}×`,
      pacedValues((p) => pacedRow(p)?.x_own_floor ?? null),
      PACED_CPU_RATIO,
      '×',
    ),
    bounded(
      'paced: time-to-first-token overhead p99 (client’s first delta − model’s first byte)',
      `≤ ${TTFT_P99_MS} ms`,
      pacedValues((p) => p.ttft_overhead_p99_ms),
      TTFT_P99_MS,
      ' ms',
    ),
    bounded(
      'paced: end-to-end overhead p99 beyond the model’s and tool’s own time (submission included)',
      `≤ ${E2E_P99_MS} ms`,
      pacedValues((p) => p.e2e_overhead_p99_ms),
      E2E_P99_MS,
      ' ms',
    ),
  );
  // The same latencies with the tasks arriving spread over a task's own time instead of in one burst.
  if (inputs.pacedSteadyWorkload !== undefined) {
    const steadyValues = (pick: (p: PacedMeasures) => number | null) =>
      meshSteady.map((p) => ({ label: label(p), value: pick(p) }));
    lines.push(
      bounded(
        'paced, steady arrivals: time-to-first-token overhead p99',
        `≤ ${TTFT_P99_MS} ms`,
        steadyValues((p) => p.ttft_overhead_p99_ms),
        TTFT_P99_MS,
        ' ms',
      ),
      bounded(
        'paced, steady arrivals: end-to-end overhead p99 (submission included)',
        `≤ ${E2E_P99_MS} ms`,
        steadyValues((p) => p.e2e_overhead_p99_ms),
        E2E_P99_MS,
        ' ms',
      ),
    );
  }
  lines.push({
    target: 'paced: NATS messages per task in (of them in-progress acks) / out',
    measured:
      meshPaced.length === 0
        ? '—'
        : meshPaced
            .map(
              (p) =>
                `${label(p)} ${cell(p.nats_in_msgs_per_task)} (${cell(p.in_progress_acks_per_task)}) / ${cell(p.nats_out_msgs_per_task)}`,
            )
            .join('; '),
    goal: 'reported',
    met: meshPaced.length === 0 ? Met.missing : Met.reported,
  });
  lines.push(
    bounded(
      'paced: executor RSS per task in flight',
      `≤ ${KIB_PER_TASK} KiB`,
      pacedValues((p) => p.executor_rss_kib_per_task),
      KIB_PER_TASK,
      ' KiB',
    ),
    bounded(
      'paced: gateway RSS per open SSE stream',
      `≤ ${KIB_PER_TASK} KiB`,
      meshPaced
        .filter((p) => p.gateway_rss_kib_per_stream !== null || p.client === TargetClient.sse)
        .map((p) => ({ label: label(p), value: p.gateway_rss_kib_per_stream })),
      KIB_PER_TASK,
      ' KiB',
    ),
  );
  const idle = meshPaced.map((p) => ({ label: label(p), value: p.idle_return_s }));
  lines.push(
    meshPaced.length === 0
      ? { target: 'paced: back to idle CPU after the load', measured: '—', goal: '', met: Met.missing }
      : {
          target: `paced: back to idle CPU after the load (idle ${cell(meshPaced[0]!.idle_ms_per_s)} ms/s)`,
          measured: idle
            .map((v) => `${v.label} ${v.value === null ? '> 30 s' : `${cell(v.value)} s`}`)
            .join('; '),
          goal: `≤ ${IDLE_RETURN_S} s`,
          met: metIf(idle.every((v) => v.value !== null && v.value <= IDLE_RETURN_S)),
        },
  );
  const pacedRows = rows.filter(
    (r) => r.workload === inputs.pacedWorkload || r.workload === inputs.pacedSteadyWorkload,
  );
  lines.push({
    target: 'paced: nothing lost (the clients’ checks; the floor’s too)',
    measured: pacedRows.length === 0 ? '—' : `${pacedRows.reduce((sum, r) => sum + r.failed, 0)} failed`,
    goal: '0 failed',
    met: pacedRows.length === 0 ? Met.missing : metIf(pacedRows.every((r) => r.failed === 0)),
  });

  const fan = inputs.fanOut;
  if (!fan) {
    lines.push({
      target: 'fan-out: 2,000 SSE followers on one gateway',
      measured: '—',
      goal: '',
      met: Met.missing,
    });
  } else {
    lines.push(
      {
        target: 'fan-out: SSE followers on one gateway, each reading its task to the end',
        measured: `${fan.followers_ok} of ${fan.followers} (${fan.tasks} tasks)`,
        goal: `${FAN_OUT_FOLLOWERS}, none failed`,
        met: metIf(fan.followers >= FAN_OUT_FOLLOWERS && fan.followers_failed === 0),
      },
      {
        target: 'fan-out: JetStream consumers while they are open (over before)',
        measured: `${fan.consumers_during - fan.consumers_before} (${fan.consumers_during} in all)`,
        goal: `a handful (≤ ${FAN_OUT_CONSUMERS})`,
        met: metIf(fan.consumers_during - fan.consumers_before <= FAN_OUT_CONSUMERS),
      },
      {
        target: 'fan-out: gateway memory per follower (RSS growth)',
        measured:
          fan.gateway_rss_kib_per_follower === null
            ? '—'
            : `${cell(fan.gateway_rss_kib_per_follower)} KiB (RSS ${cell(fan.gateway_rss_mib)} MiB)`,
        goal: `bounded: ≤ ${KIB_PER_TASK} KiB`,
        met:
          fan.gateway_rss_kib_per_follower === null
            ? Met.missing
            : metIf(fan.gateway_rss_kib_per_follower <= KIB_PER_TASK),
      },
      {
        target: 'fan-out: CPU per delivered event (gateway; whole mesh)',
        measured: `${cell(fan.gateway_cpu_us_per_event)} µs; ${cell(fan.mesh_cpu_us_per_event)} µs`,
        goal: 'reported',
        met: Met.reported,
      },
    );
  }

  lines.push(
    inputs.converter
      ? {
          target:
            'converter: every document ≤ 0.5× samchon, 20k ops ≤ 2.5 s (table below; `npm run bench:converter`)',
          measured: `${inputs.converter.passed} of ${inputs.converter.total} pass`,
          goal: 'all pass',
          met: metIf(inputs.converter.passed === inputs.converter.total),
        }
      : {
          target: 'converter (`npm run bench:converter`)',
          measured: '—',
          goal: 'all pass',
          met: Met.missing,
        },
  );
  lines.push({
    target: 'model adapters: CPU per streamed delta',
    measured: inputs.adapters?.map((a) => `${a.adapter} ${cell(a.us_per_delta)} µs`).join('; ') ?? '—',
    goal: 'reported',
    met: inputs.adapters ? Met.reported : Met.missing,
  });
  return lines;
}

export function renderTargets(lines: readonly TargetLine[]): string {
  const mark = (met: Met): string =>
    met === Met.yes
      ? '✅ met'
      : met === Met.no
        ? '❌ NOT MET'
        : met === Met.reported
          ? 'reported'
          : '— not measured';
  return [
    '| issue 27 target | measured | goal | |',
    '| --- | --- | --- | --- |',
    ...lines.map((line) => `| ${line.target} | ${line.measured} | ${line.goal} | ${mark(line.met)} |`),
  ].join('\n');
}
