/**
 * The bench's results as data and as markdown: one row per (workload, client, concurrency), the median
 * of its passes, each mesh row set against the in-process floor of the same workload and concurrency.
 */
import { ProcessName, type CpuByProcess } from './cpu-meter.js';
import type { NatsTraffic } from './nats-varz.js';
import { median, round } from './stats.js';

/** The client column of the floor rows. */
export const FLOOR_CLIENT = 'in-process loop (floor)';

export interface BenchRow {
  workload: string;
  client: string;
  concurrency: number;
  /** Tasks run in each pass. */
  tasks: number;
  passes: number;
  /** Tasks that ended in an `error` event, broke a guarantee or threw, over all passes. */
  failed: number;
  /** Tasks that succeeded, per second of the pass. */
  tasks_per_s: number;
  /** Submission → terminal event at the client. */
  p50_ms: number;
  p99_ms: number;
  mean_ms: number;
  /** Submission → first `message_chunk` at the client (median over the tasks that had one). */
  first_chunk_p50_ms: number | null;
  events_per_task: number | null;
  message_chunks_per_task: number | null;
  cpu_ms_per_task: CpuByProcess;
  /** Sum of `cpu_ms_per_task` over the processes. */
  cpu_total_ms_per_task: number;
  /**
   * CPU per task without the mocks' process (scripted models, tool APIs): every process a runner starts.
   * For the floor: the in-process loop's own CPU, the denominator outside benches use.
   */
  cpu_own_ms_per_task: number;
  /** cpu_total_ms_per_task / the floor's, same workload and concurrency (mocks on both sides). */
  x_floor: number | null;
  /** cpu_own_ms_per_task / the floor's own: the ratio issue 27's targets are set in. */
  x_own_floor: number | null;
  /** Busy CPU of the whole machine per task, background included (/proc/stat). */
  machine_cpu_ms_per_task: number | null;
  /** nats-server's own counters per task (/varz); null where NATS is not involved. */
  nats_per_task: NatsTraffic | null;
}

const medianOrNull = (values: readonly (number | null)[]): number | null => {
  const present = values.filter((value): value is number => value !== null);
  return present.length === 0 ? null : round(median(present));
};

/** One row from several passes of a scenario: the median of each number, failures summed. */
export function medianOfPasses(passes: readonly BenchRow[]): BenchRow {
  const [first] = passes;
  if (!first) throw new Error('no pass to take the median of');
  const of = (pick: (row: BenchRow) => number | null): number | null => medianOrNull(passes.map(pick));
  const cpu: CpuByProcess = {};
  for (const name of Object.values(ProcessName)) {
    const value = of((row) => row.cpu_ms_per_task[name] ?? null);
    if (value !== null) cpu[name] = value;
  }
  const nats = passes.every((row) => row.nats_per_task !== null)
    ? {
        in_msgs: of((row) => row.nats_per_task!.in_msgs)!,
        out_msgs: of((row) => row.nats_per_task!.out_msgs)!,
        in_bytes: of((row) => row.nats_per_task!.in_bytes)!,
        out_bytes: of((row) => row.nats_per_task!.out_bytes)!,
      }
    : null;
  return {
    workload: first.workload,
    client: first.client,
    concurrency: first.concurrency,
    tasks: first.tasks,
    passes: passes.length,
    failed: passes.reduce((sum, row) => sum + row.failed, 0),
    tasks_per_s: of((row) => row.tasks_per_s)!,
    p50_ms: of((row) => row.p50_ms)!,
    p99_ms: of((row) => row.p99_ms)!,
    mean_ms: of((row) => row.mean_ms)!,
    first_chunk_p50_ms: of((row) => row.first_chunk_p50_ms),
    events_per_task: of((row) => row.events_per_task),
    message_chunks_per_task: of((row) => row.message_chunks_per_task),
    cpu_ms_per_task: cpu,
    // The median of the passes' totals, not the sum of the per-process medians.
    cpu_total_ms_per_task: of((row) => row.cpu_total_ms_per_task)!,
    cpu_own_ms_per_task: of((row) => row.cpu_own_ms_per_task)!,
    x_floor: null,
    x_own_floor: null,
    machine_cpu_ms_per_task: of((row) => row.machine_cpu_ms_per_task),
    nats_per_task: nats,
  };
}

/** Sets `x_floor` and `x_own_floor` on every row that has a floor row of the same workload and concurrency. */
export function withFloorRatios(rows: readonly BenchRow[]): BenchRow[] {
  return rows.map((row) => {
    const floor = rows.find(
      (candidate) =>
        candidate.client === FLOOR_CLIENT &&
        candidate.workload === row.workload &&
        candidate.concurrency === row.concurrency,
    );
    const x_floor =
      floor && floor.cpu_total_ms_per_task > 0
        ? round(row.cpu_total_ms_per_task / floor.cpu_total_ms_per_task)
        : null;
    const x_own_floor =
      floor && floor.cpu_own_ms_per_task > 0
        ? round(row.cpu_own_ms_per_task / floor.cpu_own_ms_per_task)
        : null;
    return { ...row, x_floor, x_own_floor };
  });
}

/** A number as a table shows it: fewer decimals as it grows; `—` when there is none. */
export function cell(value: number | null | undefined): string {
  if (value === null || value === undefined || Number.isNaN(value)) return '—';
  const magnitude = Math.abs(value);
  if (magnitude >= 100) return value.toFixed(0);
  if (magnitude >= 10) return value.toFixed(1);
  return value.toFixed(2);
}

const kb = (bytes: number | undefined): number | undefined =>
  bytes === undefined ? undefined : bytes / 1024;

/** A markdown table; the first `leftColumns` are text (left-aligned), the rest numbers. */
function table(header: readonly string[], leftColumns: number, body: readonly string[][]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`;
  const rule = line(header.map((_, i) => (i < leftColumns ? '---' : '---:')));
  return [line(header), rule, ...body.map(line)].join('\n');
}

const workloadCell = (row: BenchRow): string =>
  row.failed > 0 ? `${row.workload} ⚠ ${row.failed} FAILED` : row.workload;

/**
 * Two tables: cost and speed (CPU ms per task by process, total, × floor, NATS traffic per task), and
 * what the clients received (events, message chunks, time to the first chunk). A process column appears
 * only when some row has it.
 */
export function renderMarkdown(rows: readonly BenchRow[]): string {
  const processes = Object.values(ProcessName).filter((name) =>
    rows.some((row) => row.cpu_ms_per_task[name] !== undefined),
  );
  const cost = table(
    [
      'workload',
      'client',
      'C',
      'tasks',
      'tasks/s',
      'p50 ms',
      'p99 ms',
      ...processes.map((name) =>
        name === ProcessName.bench ? 'bench¹' : name === ProcessName.mocks ? 'mocks³' : name,
      ),
      '**total**',
      '× floor',
      'own⁴',
      '**× own floor**',
      'machine²',
      'NATS msgs in',
      'msgs out',
      'KB in',
      'KB out',
    ],
    2,
    rows.map((row) => [
      workloadCell(row),
      row.client,
      String(row.concurrency),
      String(row.tasks),
      cell(row.tasks_per_s),
      cell(row.p50_ms),
      cell(row.p99_ms),
      ...processes.map((name) => cell(row.cpu_ms_per_task[name])),
      `**${cell(row.cpu_total_ms_per_task)}**`,
      cell(row.x_floor),
      cell(row.cpu_own_ms_per_task),
      `**${cell(row.x_own_floor)}**`,
      cell(row.machine_cpu_ms_per_task),
      cell(row.nats_per_task?.in_msgs),
      cell(row.nats_per_task?.out_msgs),
      cell(kb(row.nats_per_task?.in_bytes)),
      cell(kb(row.nats_per_task?.out_bytes)),
    ]),
  );
  const received = table(
    ['workload', 'client', 'C', 'events/task', 'message_chunk/task', 'first chunk p50 ms', 'failed'],
    2,
    rows
      .filter((row) => row.events_per_task !== null || row.message_chunks_per_task !== null)
      .map((row) => [
        row.workload,
        row.client,
        String(row.concurrency),
        cell(row.events_per_task),
        cell(row.message_chunks_per_task),
        cell(row.first_chunk_p50_ms),
        String(row.failed),
      ]),
  );
  return [
    'CPU columns are ms of CPU per task, by process; NATS columns are per task, from nats-server’s /varz.',
    '',
    cost,
    '',
    '¹ bench = the bench process itself: the client, and for the floor the in-process loop.',
    '² machine = busy CPU of the whole machine per task, background included.',
    '³ mocks = the mocks’ process: the scripted model and the tool API (in total and × floor on both sides).',
    '⁴ own = total without the mocks: every process a runner starts; the floor’s own is the loop’s CPU alone.',
    '× own floor = own / the floor’s own (issue 27’s denominator, as outside benches count).',
    '',
    received,
  ].join('\n');
}
