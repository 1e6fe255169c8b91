/**
 * `npm run bench:converter`: the converter section of the bench alone (no mesh), for quick before/after
 * comparisons. Writes `.bench/converter.md` and `.bench/converter.json` at the repo root.
 * `BENCH_CONVERTER_RUNS` sets the runs per document (default 5).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchConverter } from './conversion-bench.js';

const runs = Number(process.env.BENCH_CONVERTER_RUNS ?? 5);
const result = await benchConverter(Number.isInteger(runs) && runs > 0 ? runs : 5);
if (result === undefined) {
  process.stderr.write('skipped: no ../shared/openapi-corpus\n');
} else {
  process.stdout.write(result.markdown);
  const out = fileURLToPath(new URL('../../../../.bench/', import.meta.url));
  mkdirSync(out, { recursive: true });
  writeFileSync(`${out}converter.md`, result.markdown);
  writeFileSync(
    `${out}converter.json`,
    `${JSON.stringify({ at: new Date().toISOString(), node: process.version, ...result }, null, 2)}\n`,
  );
}
