/**
 * The model adapters' CPU per streamed delta, as `npm run bench` reports it: runs the executor's own
 * measuring script (services/executor/src/llm/bench/adapter-delta-cpu.ts) as a child process, so its
 * model server and its adapters cost the bench nothing, and reads the lines it prints.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export interface AdapterCpuRow {
  adapter: string;
  us_per_delta: number;
  ms_per_call: number;
}

export interface AdapterCpu {
  deltas: number;
  calls: number;
  rows: AdapterCpuRow[];
  /** The script's own output, as it printed it. */
  output: string;
}

const LINE = /^(\S.*?)\s+(\d+(?:\.\d+)?) µs CPU\/delta\s+(\d+(?:\.\d+)?) ms CPU\/call/;

/** The adapter rows of the script's output (`<name> <µs> µs CPU/delta <ms> ms CPU/call (…)`); other lines are skipped. */
export function parseAdapterCpu(output: string): AdapterCpuRow[] {
  const rows: AdapterCpuRow[] = [];
  for (const line of output.split('\n')) {
    const match = LINE.exec(line.trim());
    if (!match) continue;
    rows.push({ adapter: match[1]!.trim(), us_per_delta: Number(match[2]), ms_per_call: Number(match[3]) });
  }
  return rows;
}

export const ADAPTER_SCRIPT = fileURLToPath(
  new URL('../../../../services/executor/src/llm/bench/adapter-delta-cpu.ts', import.meta.url),
);

export async function benchAdapters(deltas: number, calls: number): Promise<AdapterCpu> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', ADAPTER_SCRIPT, String(deltas), String(calls)],
    { timeout: 600_000, maxBuffer: 1 << 20 },
  );
  const rows = parseAdapterCpu(stdout);
  if (rows.length === 0) throw new Error(`adapter-delta-cpu printed no adapter line:\n${stdout}`);
  return { deltas, calls, rows, output: stdout };
}

export function renderAdapterCpu(result: AdapterCpu): string {
  return [
    `Model adapters, CPU per streamed delta (${result.deltas} text deltas a call, ${result.calls} calls each; ` +
      '`services/executor/src/llm/bench/adapter-delta-cpu.ts`, a child process):',
    '',
    '| adapter | µs CPU / delta | ms CPU / call |',
    '| --- | ---: | ---: |',
    ...result.rows.map((row) => `| ${row.adapter} | ${row.us_per_delta} | ${row.ms_per_call} |`),
  ].join('\n');
}
