import { describe, expect, it } from 'vitest';
import {
  cell,
  FLOOR_CLIENT,
  medianOfPasses,
  renderMarkdown,
  withFloorRatios,
  type BenchRow,
} from './bench-report.js';

const row = (overrides: Partial<BenchRow>): BenchRow => ({
  workload: 'one-tool',
  client: 'SSE',
  concurrency: 1,
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
  cpu_ms_per_task: { 'nats-server': 10, gateway: 8, assembler: 4, executor: 12, bench: 3, mocks: 2 },
  cpu_total_ms_per_task: 39,
  cpu_own_ms_per_task: 37,
  x_floor: null,
  x_own_floor: null,
  machine_cpu_ms_per_task: 40,
  nats_per_task: { in_msgs: 31, out_msgs: 41, in_bytes: 20_480, out_bytes: 40_960 },
  ...overrides,
});

const floor = (overrides: Partial<BenchRow> = {}): BenchRow =>
  row({
    client: FLOOR_CLIENT,
    cpu_ms_per_task: { bench: 0.5, mocks: 0.75 },
    cpu_total_ms_per_task: 1.25,
    cpu_own_ms_per_task: 0.5,
    nats_per_task: null,
    events_per_task: null,
    ...overrides,
  });

describe('the bench report', () => {
  it('a mesh row is set against the floor of its own workload and concurrency only', () => {
    const rows = withFloorRatios([
      floor({ concurrency: 1, cpu_total_ms_per_task: 1.25 }),
      floor({ concurrency: 64, cpu_total_ms_per_task: 2 }),
      row({ concurrency: 64, cpu_total_ms_per_task: 10 }),
      row({ workload: 'long-answer', concurrency: 1 }),
    ]);
    expect(rows.map((r) => r.x_floor)).toEqual([1, 1, 5, null]);
  });

  it('when the mocks run apart, the own ratio sets the mesh without mocks against the loop’s own CPU', () => {
    const rows = withFloorRatios([
      floor({ concurrency: 64, cpu_total_ms_per_task: 2, cpu_own_ms_per_task: 0.5 }),
      row({ concurrency: 64, cpu_total_ms_per_task: 10, cpu_own_ms_per_task: 8.5 }),
    ]);
    expect(rows.map((r) => [r.x_floor, r.x_own_floor])).toEqual([
      [1, 1],
      [5, 17],
    ]);
  });

  it('the median of three passes takes each number’s middle value, per process too, and sums failures', () => {
    const merged = medianOfPasses([
      row({ tasks_per_s: 10, cpu_ms_per_task: { gateway: 9 }, cpu_total_ms_per_task: 30, failed: 1 }),
      row({ tasks_per_s: 30, cpu_ms_per_task: { gateway: 5 }, cpu_total_ms_per_task: 50, failed: 0 }),
      row({ tasks_per_s: 20, cpu_ms_per_task: { gateway: 7 }, cpu_total_ms_per_task: 40, failed: 2 }),
    ]);
    expect(merged).toMatchObject({
      passes: 3,
      failed: 3,
      tasks_per_s: 20,
      cpu_ms_per_task: { gateway: 7 },
      cpu_total_ms_per_task: 40,
    });
  });

  it('the median of no pass is an error rather than a row of zeros', () => {
    expect(() => medianOfPasses([])).toThrow(/no pass/);
  });

  it('numbers lose decimals as they grow, and a missing one shows as a dash', () => {
    expect([cell(1.234), cell(12.345), cell(1234.5), cell(null), cell(undefined)]).toEqual([
      '1.23',
      '12.3',
      '1235',
      '—',
      '—',
    ]);
  });

  it('the markdown table has a column per process seen, the total, the ratio and NATS traffic in KB', () => {
    const markdown = renderMarkdown(withFloorRatios([floor(), row({})]));
    const lines = markdown.split('\n');
    const header = lines.find((line) => line.startsWith('| workload | client | C | tasks'))!;
    expect(header).toContain(
      '| nats-server | gateway | assembler | executor | bench¹ | mocks³ | **total** | × floor | own⁴ | **× own floor** |',
    );
    expect(header).not.toContain('recall');
    const meshLine = lines.find((line) => line.startsWith('| one-tool | SSE | 1 | 100 |'))!;
    expect(meshLine).toBe(
      '| one-tool | SSE | 1 | 100 | 50.0 | 20.0 | 40.0 | 10.0 | 8.00 | 4.00 | 12.0 | 3.00 | 2.00 | **39.0** | 31.2 | 37.0 | **74.0** | 40.0 | 31.0 | 41.0 | 20.0 | 40.0 |',
    );
    const floorLine = lines.find((line) => line.startsWith(`| one-tool | ${FLOOR_CLIENT} |`))!;
    expect(floorLine).toContain('| — | — | — | — | 0.50 | 0.75 | **1.25** | 1.00 | 0.50 | **1.00** |');
  });

  it('failed tasks are shouted in the workload cell', () => {
    const markdown = renderMarkdown([row({ failed: 3 })]);
    expect(markdown).toContain('| one-tool ⚠ 3 FAILED | SSE |');
  });
});
