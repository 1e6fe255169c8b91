import { describe, expect, it } from 'vitest';
import { FLOOR_CLIENT, withFloorRatios, type BenchRow } from './bench-report.js';
import type { FanOutResult } from './fan-out.js';
import type { PacedMeasures } from './paced-run.js';
import { issue27Targets, Met, renderTargets, TargetClient } from './targets.js';

const row = (overrides: Partial<BenchRow>): BenchRow => ({
  workload: 'one-tool',
  client: 'SSE',
  concurrency: 64,
  tasks: 100,
  passes: 1,
  failed: 0,
  tasks_per_s: 50,
  p50_ms: 20,
  p99_ms: 40,
  mean_ms: 22,
  first_chunk_p50_ms: 15,
  events_per_task: 13,
  message_chunks_per_task: 8,
  cpu_ms_per_task: {},
  cpu_total_ms_per_task: 10,
  cpu_own_ms_per_task: 8,
  x_floor: null,
  x_own_floor: null,
  machine_cpu_ms_per_task: null,
  nats_per_task: null,
  ...overrides,
});

const paced = (overrides: Partial<PacedMeasures>): PacedMeasures => ({
  workload: 'paced',
  client: 'SSE',
  in_flight: 100,
  tasks: 300,
  ttft_overhead_p50_ms: 5,
  ttft_overhead_p99_ms: 20,
  e2e_overhead_p50_ms: 30,
  e2e_overhead_p99_ms: 45,
  submit_to_model_p50_ms: 10,
  submit_to_model_p99_ms: 30,
  call_to_tool_p50_ms: 5,
  call_to_tool_p99_ms: 5,
  tool_to_model_p50_ms: 5,
  tool_to_model_p99_ms: 5,
  model_to_done_p50_ms: 10,
  model_to_done_p99_ms: 10,
  nats_in_msgs_per_task: 40,
  in_progress_acks_per_task: 1,
  other_acks_per_task: 2,
  nats_out_msgs_per_task: 60,
  executor_rss_kib_per_task: 50,
  gateway_rss_kib_per_stream: 40,
  idle_ms_per_s: 5,
  idle_return_s: 3,
  ...overrides,
});

const fanOut: FanOutResult = {
  tasks: 20,
  followers: 2000,
  followers_ok: 2000,
  followers_failed: 0,
  api_keys: 21,
  max_open: 2000,
  events_delivered: 240_000,
  gateway_rss_mib: 180,
  gateway_rss_kib_per_follower: 30,
  consumers_during: 12,
  consumers_before: 10,
  gateway_cpu_us_per_event: 4,
  mesh_cpu_us_per_event: 6,
  seconds: 9,
};

const inputs = (rows: BenchRow[], measures: PacedMeasures[]) => ({
  rows: withFloorRatios(rows),
  paced: measures,
  fanOut,
  converter: { passed: 10, total: 11 },
  adapters: [{ adapter: 'openai-chat (fast)', us_per_delta: 3.2 }],
  pacedWorkload: 'paced',
});

const baseRows = (): BenchRow[] => [
  row({ client: FLOOR_CLIENT, cpu_own_ms_per_task: 2, concurrency: 64 }),
  row({ client: 'SSE', cpu_own_ms_per_task: 7, concurrency: 64 }),
  row({ client: 'NATS', cpu_own_ms_per_task: 9, concurrency: 64 }),
  row({ client: TargetClient.sseDefaultSlots, cpu_own_ms_per_task: 7.1, concurrency: 64 }),
  row({ client: TargetClient.natsDefaultSlots, cpu_own_ms_per_task: 13, concurrency: 64 }),
  row({ workload: 'paced', client: FLOOR_CLIENT, concurrency: 100, cpu_own_ms_per_task: 10 }),
  row({ workload: 'paced', client: 'SSE', concurrency: 100, cpu_own_ms_per_task: 25 }),
];

describe('issue 27 targets', () => {
  it('a C=64 ratio within 4× of the floor’s own is met, and one beyond it is not', () => {
    const lines = issue27Targets(inputs(baseRows(), [paced({})]));
    const sse = lines.find((l) => l.target.startsWith('one-tool, SSE client, C=64'))!;
    const nats = lines.find((l) => l.target.startsWith('one-tool, NATS client, C=64'))!;
    expect([sse.measured, sse.met]).toEqual(['3.50×', Met.yes]);
    expect([nats.measured, nats.met]).toEqual(['4.50×', Met.no]);
  });

  it('a target of a scenario this run did not measure says so instead of passing', () => {
    const lines = issue27Targets(inputs(baseRows(), [paced({})]));
    expect(lines.find((l) => l.target.startsWith('one-tool, SSE client, C=1'))!.met).toBe(Met.missing);
  });

  it('the backlog is met when default slots cost no more per task than 64 slots (noise allowed), not otherwise', () => {
    const lines = issue27Targets(inputs(baseRows(), [paced({})]));
    const backlog = lines.filter((l) => l.target.startsWith('backlog'));
    expect(backlog.map((l) => [l.measured, l.met])).toEqual([
      ['7.10 vs 7.00', Met.yes],
      ['13.0 vs 9.00', Met.no],
    ]);
  });

  it('a paced target holds only when every client and count in flight is within it', () => {
    const lines = issue27Targets(
      inputs(baseRows(), [
        paced({}),
        paced({ client: 'NATS', ttft_overhead_p99_ms: 30, gateway_rss_kib_per_stream: null }),
      ]),
    );
    const ttft = lines.find((l) => l.target.startsWith('paced: time-to-first-token'))!;
    expect(ttft).toMatchObject({ measured: 'SSE 100: 20.0 ms; NATS 100: 30.0 ms', met: Met.no });
    const e2e = lines.find((l) => l.target.startsWith('paced: end-to-end'))!;
    expect(e2e.met).toBe(Met.yes);
    // The paced CPU ratio: SSE 25 / 10 = 2.5×; NATS has no row, so it is not met.
    const cpu = lines.find((l) => l.target.startsWith('paced: CPU'))!;
    expect(cpu).toMatchObject({ measured: 'SSE 100: 2.50×; NATS 100: —', met: Met.no });
    // Gateway memory per stream concerns SSE clients only.
    expect(lines.find((l) => l.target.startsWith('paced: gateway RSS'))!).toMatchObject({
      measured: 'SSE 100: 40.0 KiB',
      met: Met.yes,
    });
  });

  it('steady arrivals are judged apart from waves: a burst past 50 ms fails the waves’ line while the steady one within it is met', () => {
    const lines = issue27Targets({
      ...inputs(baseRows(), [
        paced({ e2e_overhead_p99_ms: 180 }),
        paced({ workload: 'paced, steady arrivals', e2e_overhead_p99_ms: 30, ttft_overhead_p99_ms: 8 }),
      ]),
      pacedSteadyWorkload: 'paced, steady arrivals',
    });
    expect(lines.find((l) => l.target.startsWith('paced: end-to-end'))!).toMatchObject({
      measured: 'SSE 100: 180 ms',
      met: Met.no,
    });
    expect(lines.find((l) => l.target.startsWith('paced, steady arrivals: end-to-end'))!).toMatchObject({
      measured: 'SSE 100: 30.0 ms',
      met: Met.yes,
    });
    expect(lines.find((l) => l.target.startsWith('paced, steady arrivals: time-to-first'))!.met).toBe(
      Met.yes,
    );
  });

  it('a pass that never got back to idle fails the idle target', () => {
    const lines = issue27Targets(inputs(baseRows(), [paced({ idle_return_s: null })]));
    expect(lines.find((l) => l.target.startsWith('paced: back to idle'))!).toMatchObject({
      measured: 'SSE 100: > 30 s',
      met: Met.no,
    });
  });

  it('fan-out: 2,000 followers none failed, two more consumers, bounded memory; the converter’s one failure shows', () => {
    const lines = issue27Targets(inputs(baseRows(), [paced({})]));
    const fan = lines.filter((l) => l.target.startsWith('fan-out'));
    expect(fan.map((l) => l.met)).toEqual([Met.yes, Met.yes, Met.yes, Met.reported]);
    expect(fan[1]!.measured).toBe('2 (12 in all)');
    expect(lines.find((l) => l.target.startsWith('converter'))!).toMatchObject({
      measured: '10 of 11 pass',
      met: Met.no,
    });
  });

  it('the table marks each line', () => {
    const table = renderTargets([
      { target: 'a', measured: '1', goal: '≤ 2', met: Met.yes },
      { target: 'b', measured: '3', goal: '≤ 2', met: Met.no },
    ]);
    expect(table.split('\n')).toEqual([
      '| issue 27 target | measured | goal | |',
      '| --- | --- | --- | --- |',
      '| a | 1 | ≤ 2 | ✅ met |',
      '| b | 3 | ≤ 2 | ❌ NOT MET |',
    ]);
  });
});
