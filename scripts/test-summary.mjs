#!/usr/bin/env node
// Adds up the vitest JSON reports every package wrote (.test-results/vitest.json) and prints one
// closing line, `tests: N passed, N failed, N skipped`, so a CI log says in one place what ran. Each
// failed test is named there too, with the start of its message: a CI log keeps only its last lines,
// and the test's own output may be far above them.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
let passed = 0;
let failed = 0;
let skipped = 0;
const perPackage = [];
const failures = [];
for (const group of ['libs', 'services', 'tests']) {
  for (const name of readdirSync(join(root, group))) {
    const report = join(root, group, name, '.test-results', 'vitest.json');
    if (!existsSync(report)) continue;
    const result = JSON.parse(readFileSync(report, 'utf8'));
    passed += result.numPassedTests;
    failed += result.numFailedTests;
    skipped += result.numPendingTests + (result.numTodoTests ?? 0);
    perPackage.push(`${group}/${name}: ${result.numPassedTests} passed, ${result.numFailedTests} failed`);
    for (const file of result.testResults ?? []) {
      for (const test of file.assertionResults ?? []) {
        if (test.status !== 'failed') continue;
        const message = (test.failureMessages ?? []).join('\n').split('\n').slice(0, 6).join('\n    ');
        failures.push(`${file.name.slice(root.length + 1)}\n  ✗ ${test.fullName}\n    ${message}`);
      }
    }
  }
}
for (const failure of failures) process.stdout.write(`${failure}\n`);
for (const line of perPackage) process.stdout.write(`  ${line}\n`);
process.stdout.write(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
if (passed === 0 || failed > 0) process.exitCode = 1;
