/**
 * The client SDK and the `agentmesh` CLI against the whole mesh: gateway, assembler and an executor
 * as real processes on real NATS, a scripted model answering. What the client yields must be exactly
 * what the gateway's SSE endpoint replays, and the CLI, run as a real process from the built package,
 * must print the model's answer and exit 0.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { MeshClient, MeshApiError } from '@agentmesh/client';
import type { TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, eventTypes, sseEvents } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

const ANSWER = 'The mesh answered through the client, chunk by chunk.';
const CLI_ENTRY = fileURLToPath(new URL('../../../libs/client/dist/cli/main.js', import.meta.url));

let mesh: Mesh;
let model: ScriptedModel;
let client: MeshClient;

beforeAll(async () => {
  model = await startScriptedModel({ respond: () => ({ content: ANSWER, chunkSize: 7 }) });
  // One event per streamed delta (no coalescing), so a task has enough events to resume in the middle of.
  mesh = await startMesh({ executors: 1, env: { executor: { EVENT_DELTA_MAX_CHARS: '1' } } });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'client_agent',
    system_prompt: 'You answer briefly.',
    model: { model_name: 'scripted', base_url: model.baseUrl },
  });
  client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
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

/** Runs the built CLI as a child process to its exit. */
async function runCliProcess(args: string[], env: Record<string, string>): Promise<CliRun> {
  const child = spawn(process.execPath, [CLI_ENTRY, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
  const [code] = (await once(child, 'close')) as [number | null];
  return { code, stdout, stderr };
}

describe('the client SDK and CLI against the mesh', () => {
  it('a task submitted with MeshClient is followed to done, and its events equal what the gateway SSE endpoint replays', async () => {
    const task = await client.run({
      workflow_id: 'client_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'say something' }],
    });
    const followed: TaskEvent[] = [];
    for await (const event of task.events) followed.push(event);

    const replayed = await sseEvents(mesh, task.trace_id);
    expect(followed).toEqual(replayed);
    expect(eventTypes(followed).slice(-2)).toEqual(['step_finished', 'done']);
    expect(
      eventTypes(followed)
        .slice(0, -2)
        .every((type) => type === 'message_chunk'),
    ).toBe(true);
    const text = followed.map((event) => (event.type === 'message_chunk' ? event.data.delta : '')).join('');
    expect(text).toBe(ANSWER);

    const status = await client.status(task.trace_id);
    expect(status).toMatchObject({ trace_id: task.trace_id, status: 'done', last_seq: followed.at(-1)!.seq });
  });

  it('resuming with lastEventId yields only the later events, and resuming after the last one yields none', async () => {
    const task = await client.run({
      workflow_id: 'client_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'again' }],
    });
    const all: TaskEvent[] = [];
    for await (const event of task.events) all.push(event);
    expect(all.length).toBeGreaterThan(3);

    const later: TaskEvent[] = [];
    for await (const event of client.events(task.trace_id, { lastEventId: 2 })) later.push(event);
    const none: TaskEvent[] = [];
    for await (const event of client.events(task.trace_id, { lastEventId: all.at(-1)!.seq }))
      none.push(event);

    expect(later).toEqual(all.filter((event) => event.seq > 2));
    expect(none).toEqual([]);
  });

  it("the gateway's refusal reaches the caller as MeshApiError with the gateway's code", async () => {
    const stranger = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: 'am_not_a_key' });

    const error = await stranger
      .status('4bf92f3577b34da6a3ce929d0e0e4736')
      .catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401, retryable: false });
  });

  it('the CLI, run as a process, submits with --follow, prints the model answer and exits 0', async () => {
    const run = await runCliProcess(
      [
        'submit',
        '--workflow',
        'client_agent',
        '--message',
        'hello from the shell',
        '--user',
        'u1',
        '--follow',
      ],
      { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: mesh.apiKey },
    );

    expect(run, run.stderr).toMatchObject({ code: 0, stdout: `${ANSWER}\n` });
    expect(run.stderr).toMatch(/^trace_id [0-9a-f]{32}\n$/);
    expect(run.stdout + run.stderr).not.toContain(mesh.apiKey);
  });

  it('the CLI exits 1 with the code on stderr when the gateway refuses the task', async () => {
    const run = await runCliProcess(
      ['submit', '--workflow', 'client_agent', '--message', 'hi', '--follow', '--json'],
      { AGENTMESH_URL: mesh.gatewayUrl, AGENTMESH_API_KEY: 'am_not_a_key' },
    );

    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(JSON.parse(run.stderr)).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(run.stderr).not.toContain('am_not_a_key');
  });
});
