/**
 * `npm run bench:profiles -- <dir>`: where each process's CPU went, from the `.cpuprofile` files a
 * profiled bench run (BENCH_CPU_PROF=<dir>) left under `<dir>/<service>/`, also those of another
 * checkout's run (how the bench README's before/after tables were made).
 */
import { resolve } from 'node:path';
import { summarizeCpuProfiles } from './cpu-profiles.js';

const dir = process.argv[2];
if (dir === undefined) {
  console.error('usage: npm run bench:profiles -- <directory of a BENCH_CPU_PROF run>');
  process.exit(2);
}
console.log(summarizeCpuProfiles(resolve(process.env['INIT_CWD'] ?? process.cwd(), dir)));
