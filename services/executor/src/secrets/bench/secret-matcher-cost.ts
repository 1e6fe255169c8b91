/**
 * What a task's secret matcher costs: the heap one holds for the task's whole run, the CPU to build it
 * (once per task), and the CPU to scan text with it (every delta, tool result and event the task writes),
 * for a task with two credentials (a model key of 51 characters and a tool key of 25). Prints one JSON
 * line; a measurement script, not a test (run with --expose-gc):
 *
 *   node --expose-gc --import tsx services/executor/src/secrets/bench/secret-matcher-cost.ts
 */
import { SecretMatcher } from '../secret-matcher.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run with --expose-gc');

const secretsOf = (i: number): string[] => [
  `sk-proj-${String(i).padStart(4, '0')}abcdefghijklmnopqrstuvwxyz0123456789ABC`,
  `tool-key-${String(i).padStart(4, '0')}-0123456789ab`,
];
const MATCHERS = 500;

gc();
const before = process.memoryUsage().heapUsed;
const held: SecretMatcher[] = [];
for (let i = 0; i < MATCHERS; i++) held.push(new SecretMatcher(secretsOf(i)));
gc();
const heapKiB = (process.memoryUsage().heapUsed - before) / MATCHERS / 1024;

const BUILDS = 5_000;
for (let i = 0; i < 500; i++) new SecretMatcher(secretsOf(i));
let started = performance.now();
for (let i = 0; i < BUILDS; i++) new SecretMatcher(secretsOf(i));
const buildUs = ((performance.now() - started) / BUILDS) * 1000;

const matcher = held[0]!;
const texts = {
  ascii: 'The quick brown fox jumps over the lazy dog, 42 times; sk-proj is not it. '
    .repeat(14)
    .slice(0, 1000),
  cjk: '这是一个关于公司的研究报告，包含了许多数据和分析。'.repeat(40).slice(0, 1000),
};
const scanUs: Record<string, number> = {};
const SCANS = 20_000;
for (const [name, text] of Object.entries(texts)) {
  for (let i = 0; i < 2_000; i++) matcher.find(text, { final: true });
  started = performance.now();
  for (let i = 0; i < SCANS; i++) matcher.find(text, { final: true });
  scanUs[name] = ((performance.now() - started) / SCANS) * 1000;
}

const round = (value: number): number => Math.round(value * 100) / 100;
console.log(
  JSON.stringify({
    heap_kib_per_matcher: round(heapKiB),
    build_us: round(buildUs),
    scan_us_per_1000_ascii: round(scanUs['ascii'] ?? NaN),
    scan_us_per_1000_cjk: round(scanUs['cjk'] ?? NaN),
    held: held.length,
  }),
);
