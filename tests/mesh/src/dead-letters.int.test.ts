/**
 * Dead letters end to end: the whole mesh as processes on real NATS, executors allowing one attempt that
 * does work per task (MAX_DELIVER=1). Every executor that takes the task is killed (SIGKILL) while the
 * model is answering it, and a new one started, until the task ends: its attempts run out, it ends
 * MAX_DELIVER_EXCEEDED and is dead-lettered — by the executor that gets the delivery after the last one,
 * or, when that delivery went to a killed executor's pull still open, by the MAX_DELIVERIES advisory
 * listener. An operator then
 * finds it with the `agentmesh` CLI (the built binary, as a child process), shows it, re-drives it, and the
 * new task runs to `done`.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { DeadLetterView, type TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, waitFor, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, sseEvents, submit } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const CLI_ENTRY = fileURLToPath(new URL('../../../libs/client/dist/cli/main.js', import.meta.url));
const ANSWER = 'It is sunny in Lisbon.';
const DOOMED = 'weather in Lisbon, please';
const never = new Promise<void>(() => {});

let mesh: Mesh;
let model: ScriptedModel;
let adminEnv: Record<string, string>;
/** Model requests of the doomed task so far: each one means an executor is running it. */
let doomedRequests = 0;
/** Once the doomed task has ended, its request (re-driven) is answered; until then never. */
let doomedTaskEnded = false;

beforeAll(async () => {
  model = await startScriptedModel({
    respond: (request) => {
      const user = request.body.messages.find((message) => message.role === 'user')?.content;
      if (user === DOOMED && !doomedTaskEnded) {
        doomedRequests += 1;
        // The answer starts (the attempt does work: its first chunk is stored), and the rest never comes:
        // the executor running it is killed meanwhile.
        return { content: 'Too late, I am afraid.', chunkSize: 4, hold: { afterChunks: 1, until: never } };
      }
      return { content: ANSWER };
    },
  });
  mesh = await startMesh({
    executors: 1,
    env: {
      executor: { MAX_DELIVER: '1', ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '500', PULL_EXPIRES_MS: '1000' },
    },
  });
  await admin(mesh, 'PUT', '/agents/plain_agent', {
    workflow_id: 'plain_agent',
    model: { model_name: 'scripted', base_url: model.baseUrl },
  });
  adminEnv = { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.adminKey };
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI as a child process to its exit, with only `env` (and PATH) as its environment. */
async function agentmesh(args: string[]): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI_ENTRY, '--account', MESH_ACCOUNT, ...args], {
    env: { PATH: process.env.PATH ?? '', ...adminEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

const text = (events: TaskEvent[]): string =>
  events.map((event) => (event.type === 'message_chunk' ? event.data.delta : '')).join('');

describe('dead letters through the mesh and the agentmesh CLI', () => {
  it('when every executor running a task is killed, the task runs out of deliveries and is dead-lettered; the CLI lists, shows and re-drives it, and the new task ends done', async () => {
    const response = await submit(mesh, {
      workflow_id: 'plain_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: DOOMED }],
    });
    expect(response.status).toBe(202);
    const { trace_id: dead } = (await response.json()) as { trace_id: string };

    // Every executor that takes the task is killed while the model is answering it, until the task ends.
    let ended = false;
    const following = sseEvents(mesh, dead).finally(() => (ended = true));
    for (let kills = 0; !ended; kills++) {
      await waitFor(() => ended || doomedRequests > kills, {
        timeoutMs: 60_000,
        description: 'an executor running the doomed task, or its end',
      });
      if (ended) break;
      await mesh.executors.at(-1)!.stop('SIGKILL');
      await mesh.addExecutor();
    }
    const deadEvents = await following;
    doomedTaskEnded = true;
    expect(
      deadEvents.at(-1),
      JSON.stringify({
        events: deadEvents.map((event) => [event.type, event.attempt]),
        logs: mesh.executors
          .flatMap((executor) => executor.logs)
          .map((line) => [line.executor_id, line.msg, line.attempt]),
      }),
    ).toMatchObject({ type: 'error', data: { code: 'MAX_DELIVER_EXCEEDED' } });

    // The letter is stored right after the error event.
    const listed = await waitFor(
      async () => {
        const run = await agentmesh(['dead-letters', 'list']);
        expect(run.code, run.stderr).toBe(0);
        return run.stdout.includes(dead) ? run : undefined;
      },
      { timeoutMs: 10_000, description: `the dead letter of ${dead} in the list` },
    );
    const line = listed.stdout.split('\n').find((candidate) => candidate.startsWith(dead));
    expect(line).toContain('plain_agent');
    // Two attempts that did work, or (when executors died before the first chunk was stored) JetStream's
    // own limit, MAX_DELIVERIES (2 × MAX_DELIVER + 1 = 3).
    expect(line).toMatch(/MAX_DELIVER_EXCEEDED after [23] deliveries/);

    const shown = await agentmesh(['dead-letters', 'show', dead, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(DeadLetterView.parse(JSON.parse(shown.stdout))).toMatchObject({
      trace_id: dead,
      account_id: MESH_ACCOUNT,
      workflow_id: 'plain_agent',
      user_id: 'u1',
      reason: { code: 'MAX_DELIVER_EXCEEDED' },
      attempts: expect.toSatisfy((attempts: number) => attempts === 2 || attempts === 3),
      // Which path finds it depends on where JetStream sends the second delivery: to the new executor (which
      // ends the task) or to the killed one's pull, still open (then the MAX_DELIVERIES advisory does).
      source: expect.stringMatching(/^(executor|advisory)$/),
      input_summary: { message_count: 1, last_user_message: DOOMED },
    });

    const redriven = await agentmesh(['dead-letters', 'redrive', dead]);
    expect(redriven.code, redriven.stderr).toBe(0);
    const fresh = redriven.stdout.trim();
    expect(fresh).toMatch(/^[0-9a-f]{32}$/);
    expect(fresh).not.toBe(dead);

    const freshEvents = await sseEvents(mesh, fresh);
    expect(freshEvents.at(-1)?.type).toBe('done');
    expect(text(freshEvents)).toBe(ANSWER);

    const after = await agentmesh(['dead-letters', 'show', dead, '--json']);
    expect(JSON.parse(after.stdout)).toMatchObject({ redriven: { trace_id: fresh } });
    const again = await agentmesh(['dead-letters', 'redrive', dead]);
    expect(again.code).not.toBe(0);
    expect(again.stderr.trim().split('\n')[0]).toMatch(/CONFLICT|re-driven already/);

    const dropped = await agentmesh(['dead-letters', 'drop', dead]);
    expect(dropped.code, dropped.stderr).toBe(0);
    expect((await agentmesh(['dead-letters', 'list'])).stdout).not.toContain(dead);
  }, 180_000);
});
