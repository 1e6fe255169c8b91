/**
 * What a task's secret matcher costs (heap held per task, CPU to build it, CPU to scan text), as
 * `npm run bench` reports it: runs the executor's own measuring script
 * (services/executor/src/secrets/bench/secret-matcher-cost.ts) as a child process with `--expose-gc`,
 * and reads the JSON line it prints.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export interface SecretMatcherCost {
  heap_kib_per_matcher: number;
  build_us: number;
  scan_us_per_1000_ascii: number;
  scan_us_per_1000_cjk: number;
}

const SCRIPT = fileURLToPath(
  new URL('../../../../services/executor/src/secrets/bench/secret-matcher-cost.ts', import.meta.url),
);

export async function benchSecretMatcher(): Promise<SecretMatcherCost> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--import', 'tsx', SCRIPT], {
    timeout: 300_000,
    maxBuffer: 1 << 20,
  });
  const line = stdout.trim().split('\n').at(-1) ?? '';
  const parsed = JSON.parse(line) as Partial<SecretMatcherCost>;
  if (typeof parsed.heap_kib_per_matcher !== 'number') {
    throw new Error(`secret-matcher-cost printed no measurement:\n${stdout}`);
  }
  return parsed as SecretMatcherCost;
}

export function renderSecretMatcherCost(cost: SecretMatcherCost): string {
  return [
    "A task's secret matcher (two credentials, 51 and 25 characters; " +
      '`services/executor/src/secrets/bench/secret-matcher-cost.ts`, a child process):',
    '',
    '| heap held per task | build (once per task) | scan 1,000 ASCII characters | scan 1,000 CJK characters |',
    '| ---: | ---: | ---: | ---: |',
    `| ${cost.heap_kib_per_matcher} KiB | ${cost.build_us} µs | ${cost.scan_us_per_1000_ascii} µs | ${cost.scan_us_per_1000_cjk} µs |`,
  ].join('\n');
}
