/**
 * Dead letters end to end: the whole mesh as processes on real NATS, executors allowed one delivery per
 * task (MAX_DELIVER=1). A task whose executor is killed mid-run (SIGKILL, while the model is answering)
 * is delivered once more — to the next executor, which ends it MAX_DELIVER_EXCEEDED and dead-letters it, or
 * to the killed executor's pull that is still open, and then the MAX_DELIVERIES advisory listener does.
 * An operator then finds it with the `agentmesh` CLI (the built binary, as a child process), shows it,
 * re-drives it, and the new task runs to `done`.
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

let mesh: Mesh;
let model: ScriptedModel;
let adminEnv: Record<string, string>;
/** Resolves when the model gets the doomed task's first request: its executor is then mid-task. */
let firstAttemptRunning: () => void;
const firstAttemptSeen = new Promise<void>((resolve) => (firstAttemptRunning = resolve));
let doomedRequests = 0;

beforeAll(async () => {
  model = await startScriptedModel({
    respond: (request) => {
      const user = request.body.messages.find((message) => message.role === 'user')?.content;
      if (user === DOOMED && ++doomedRequests === 1) {
        firstAttemptRunning();
        // Never answered in time: the executor running it is killed meanwhile.
        return { content: 'too late', latencyMs: 120_000 };
      }
      return { content: ANSWER };
    },
  });
  mesh = await startMesh({
    executors: 1,
    env: { executor: { MAX_DELIVER: '1', ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '500' } },
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
  it('a task whose executor is killed on its only delivery is dead-lettered; the CLI lists, shows and re-drives it, and the new task ends done', async () => {
    const response = await submit(mesh, {
      workflow_id: 'plain_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: DOOMED }],
    });
    expect(response.status).toBe(202);
    const { trace_id: dead } = (await response.json()) as { trace_id: string };

    await firstAttemptSeen;
    await mesh.executors[0]!.stop('SIGKILL');
    await mesh.addExecutor();

    const deadEvents = await sseEvents(mesh, dead);
    expect(deadEvents.at(-1)).toMatchObject({ type: 'error', data: { code: 'MAX_DELIVER_EXCEEDED' } });

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
    expect(line).toContain('MAX_DELIVER_EXCEEDED after 2 deliveries');

    const shown = await agentmesh(['dead-letters', 'show', dead, '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(DeadLetterView.parse(JSON.parse(shown.stdout))).toMatchObject({
      trace_id: dead,
      account_id: MESH_ACCOUNT,
      workflow_id: 'plain_agent',
      user_id: 'u1',
      reason: { code: 'MAX_DELIVER_EXCEEDED' },
      attempts: 2,
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
