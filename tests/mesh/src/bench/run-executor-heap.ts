/**
 * `npm run bench:heap`: the executor's live heap per task in flight, from two heap snapshots of one
 * executor (V8 collects garbage before writing one): idle after a warm-up, and with N tasks streaming
 * their answers (the scripted model: 400 ms to the first byte, then 4 characters every 40 ms; a model key of
 * 56 characters). The bench's
 * RSS per task (`npm run bench`, paced) also counts what V8 has not given back; this counts only what the
 * tasks keep alive. Prints the growth per task and the kinds of object it is made of.
 *
 *   npm run bench:heap [-- <tasks in flight, default 200>]
 */
import { startScriptedModel, waitFor } from '@agentmesh/testkit';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { admin, scriptedModel, storeModelKey, submit } from '../mesh-client.js';
import { startMesh, type Mesh } from '../mesh-harness.js';
import { heapByKind, heapGrowth } from './heap-snapshot-summary.js';

const inFlight = Number(process.argv[2] ?? 200);
if (!Number.isInteger(inFlight) || inFlight < 1) throw new Error('tasks in flight: a positive integer');
const dir = mkdtempSync(join(tmpdir(), 'executor-heap-'));
const ANSWER_DELTAS = 200;
const DELTA_MS = 40;

const model = await startScriptedModel({
  respond: () => ({
    content: 'tok '.repeat(ANSWER_DELTAS),
    chunkSize: 4,
    chunkDelayMs: DELTA_MS,
    latencyMs: 400,
  }),
});
let mesh: Mesh | undefined;
try {
  mesh = await startMesh({
    executors: 1,
    env: { executor: { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` } },
  });
  // As long as a real provider's key (OpenAI's project keys are longer still): a task's scrubber holds its forms.
  await storeModelKey(mesh, `sk-proj-${'k'.repeat(48)}`);
  await admin(mesh, 'POST', '/agents', { workflow_id: 'heap_agent', model: scriptedModel(model.baseUrl) });
  const executor = mesh.executors[0]!;
  const running = mesh;

  /** Submits `count` tasks and resolves once the model has been asked for each. */
  const load = async (count: number, label: string): Promise<void> => {
    const asked = model.requests.length;
    await Promise.all(
      Array.from({ length: count }, (_, i) =>
        submit(running, {
          workflow_id: 'heap_agent',
          user_id: 'u1',
          messages: [{ role: 'user', content: `${label}-${i}` }],
        }),
      ),
    );
    await waitFor(() => model.requests.length >= asked + count, { timeoutMs: 120_000 });
  };
  const snapshot = async (): Promise<string> => {
    const before = new Set(readdirSync(dir));
    executor.child.kill('SIGUSR2');
    let written: string | undefined;
    // The file appears when V8 starts writing; it is complete once its size stops changing.
    await waitFor(() => (written = readdirSync(dir).find((file) => !before.has(file))) !== undefined, {
      timeoutMs: 120_000,
    });
    await waitFor(() => settled(join(dir, written!)), { timeoutMs: 120_000 });
    return join(dir, written!);
  };

  // Warm-up: the same tasks, to their end, so code and caches are in place before the idle snapshot.
  for (let round = 0; round < 2; round++) await load(Math.min(inFlight, 50), `warm-${round}`);
  await waitFor(
    () =>
      executor.logs.filter((line) => line.msg === 'task attempt finished').length >=
      Math.min(inFlight, 50) * 2,
    {
      timeoutMs: 120_000,
    },
  );
  const finishedCount = (): number =>
    executor.logs.filter((line) => line.msg === 'task attempt finished').length;
  const idle = await snapshot();
  const finishedBefore = finishedCount();
  await load(inFlight, 'load');
  // Past the model's first byte for every task (400 ms) and some deltas in: what a task holds while it
  // streams, its scrubber's matcher included (built at the first delta). The answers last 8 s.
  await sleep(1_500);
  const loaded = await snapshot();
  const finishedMeanwhile = finishedCount() - finishedBefore;
  const growth = heapGrowth(heapByKind(idle), heapByKind(loaded));
  console.log(`# executor live heap per task in flight (${new Date().toISOString()})\n`);
  console.log(
    `${inFlight} tasks streaming (${finishedMeanwhile} of them finished before the second snapshot); ` +
      `the loaded heap holds ${(growth.totalBytes / 1024 / 1024).toFixed(1)} MiB more than the idle one: ` +
      `**${(growth.totalBytes / inFlight / 1024).toFixed(1)} KiB per task**.\n`,
  );
  console.log('| kind of object | KiB per task | objects per task |\n| --- | ---: | ---: |');
  for (const kind of growth.kinds.slice(0, 15)) {
    console.log(
      `| ${kind.kind} | ${(kind.bytes / inFlight / 1024).toFixed(2)} | ${(kind.count / inFlight).toFixed(1)} |`,
    );
  }
} finally {
  await mesh?.stop();
  await model.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** Whether a file's size stayed the same over half a second (V8 is done writing it). */
async function settled(path: string): Promise<boolean> {
  const first = statSync(path).size;
  await sleep(500);
  return first > 0 && statSync(path).size === first;
}
