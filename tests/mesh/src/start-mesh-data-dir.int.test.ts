/**
 * Issue 21, "a development mesh that keeps its state": `npm start -- --data-dir DIR` keeps keys, the NATS
 * store, registrations, credentials (readable: the master key is kept) and tasks across a restart, which
 * says it reuses them; without it, npm start says that all is thrown away at stop. A nats-server killed
 * under a running mesh is restarted on the same store (said on stdout), and a task then reaches done.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from '@agentmesh/testkit';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { printedValue, startMeshScript, stopAllMeshScripts, type StartedMesh } from './start-mesh-run.js';

const dirs: string[] = [];

afterEach(async () => {
  await stopAllMeshScripts();
});

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const keysOf = (output: string): { adminKey: string; accountKey: string } => ({
  adminKey: printedValue(output, /admin key [^:]*:/),
  accountKey: printedValue(output, /account API key of account `acme` [^:]*:/),
});

async function call(
  mesh: StartedMesh,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      'x-account-id': 'acme',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** Submits a task with the account key and reads its SSE stream to the end; the trace id and events. */
async function runTask(
  mesh: StartedMesh,
  accountKey: string,
  workflowId: string,
  userId: string,
): Promise<{ traceId: string; events: string }> {
  const submitted = await call(mesh, accountKey, 'POST', '/v1/tasks', {
    workflow_id: workflowId,
    user_id: userId,
    messages: [{ role: 'user', content: 'Tell me about ByteDance' }],
  });
  expect(submitted.status).toBe(202);
  const { trace_id: traceId } = (await submitted.json()) as { trace_id: string };
  const events = await (await call(mesh, accountKey, 'GET', `/v1/tasks/${traceId}/events`)).text();
  return { traceId, events };
}

async function demoModelUrl(mesh: StartedMesh, adminKey: string): Promise<string> {
  const demo = (await (await call(mesh, adminKey, 'GET', '/v1/admin/agents/demo_agent')).json()) as {
    model: { base_url: string };
  };
  return demo.model.base_url;
}

/** An agent of the user's own on the demo model, whose key is a credential of user `keeper` only. */
const keeperAgent = (modelUrl: string): unknown => ({
  workflow_id: 'keeper_agent',
  system_prompt: 'You answer questions about companies.',
  model: { model_name: 'demo-scripted', base_url: modelUrl, api_key_credential: 'KEEPER_MODEL_KEY' },
  tools: ['demo_company_lookup'],
});

describe('npm start --data-dir', () => {
  it('when started twice on one data directory, the second run reuses the keys and sees the first run’s agent, credential and task', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'agentmesh-data-dir-'));
    dirs.push(dir);
    const first = await startMeshScript({ args: ['--data-dir', dir] });
    expect(first.output()).toContain(`[mesh] data directory ${dir}: keys, NATS store`);
    const keys = keysOf(first.output());
    const put = await call(
      first,
      keys.adminKey,
      'PUT',
      '/v1/admin/agents/keeper_agent',
      keeperAgent(await demoModelUrl(first, keys.adminKey)),
    );
    expect(put.ok).toBe(true);
    const credential = await call(
      first,
      keys.adminKey,
      'PUT',
      '/v1/admin/accounts/acme/users/keeper/credentials/KEEPER_MODEL_KEY',
      { value: 'kept-model-key-value' },
    );
    expect(credential.status).toBe(204);
    const task = await runTask(first, keys.accountKey, 'keeper_agent', 'keeper');
    expect(task.events).toMatch(/event: done/);
    expect(await first.stop()).toBe(0);
    // The secrets file is the user's alone.
    expect(statSync(join(dir, 'state.json')).mode & 0o077).toBe(0);
    expect(readdirSync(join(dir, 'nats', 'store')).length).toBeGreaterThan(0);

    // The variable instead of the flag, this time.
    const second = await startMeshScript({ env: { AGENTMESH_DATA_DIR: dir } });
    expect(second.output()).toContain(`[mesh] data directory ${dir}: reusing the keys`);
    expect(keysOf(second.output())).toEqual(keys);
    const status = (await (
      await call(second, keys.accountKey, 'GET', `/v1/tasks/${task.traceId}`)
    ).json()) as { status: string };
    expect(status.status).toBe('done');
    const replayed = await (
      await call(second, keys.accountKey, 'GET', `/v1/tasks/${task.traceId}/events`)
    ).text();
    expect(replayed).toMatch(/event: done/);
    const kept = await call(second, keys.adminKey, 'GET', '/v1/admin/agents/keeper_agent');
    expect(kept.status).toBe(200);
    // The demo model listens on a new port this run; the kept credential still opens with the kept master key.
    await call(
      second,
      keys.adminKey,
      'PUT',
      '/v1/admin/agents/keeper_agent',
      keeperAgent(await demoModelUrl(second, keys.adminKey)),
    );
    const again = await runTask(second, keys.accountKey, 'keeper_agent', 'keeper');
    expect(again.events).toMatch(/event: done/);
    expect(again.events).toContain('ByteDance Ltd.');
  });

  it('when started without one, it says that everything is thrown away at stop, and its NATS store is gone after', async () => {
    const mesh = await startMeshScript();
    expect(mesh.output()).toContain(
      '[mesh] no data directory: keys, NATS store, agents, credentials and tasks are thrown away at stop',
    );
    const natsDir = /JetStream store in (\S+)\)/.exec(mesh.output())?.[1];
    expect(natsDir && existsSync(natsDir)).toBe(true);
    expect(await mesh.stop()).toBe(0);
    expect(existsSync(natsDir!)).toBe(false);
  });
});

describe('npm start when nats-server dies', () => {
  it('restarts it on the same store, says so, keeps the services running, and a task reaches done', async () => {
    const mesh = await startMeshScript();
    const { accountKey } = keysOf(mesh.output());
    const natsDir = /JetStream store in (\S+)\)/.exec(mesh.output())?.[1];
    const natsPid = (): number | undefined => {
      for (const entry of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
        try {
          const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
          const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
          if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
          if (cmdline.includes(`nats-server -c ${natsDir}/mesh.conf`)) return Number(entry);
        } catch {
          // gone meanwhile
        }
      }
      return undefined;
    };
    const killed = natsPid();
    expect(killed).toBeDefined();
    process.kill(killed!, 'SIGKILL');
    await waitFor(() => mesh.output().includes('nats-server exited (killed by SIGKILL): restarting it'), {
      timeoutMs: 15_000,
      description: 'the restart line',
    });
    expect(mesh.output()).toContain(`on the same store (${natsDir})`);
    const restarted = await waitFor(() => natsPid(), { timeoutMs: 15_000, description: 'a new nats-server' });
    expect(restarted).not.toBe(killed);
    // The gateway answers 503 until it has reconnected; then the task runs through every service.
    const traceId = await waitFor(
      async () => {
        const submitted = await fetch(`${mesh.gatewayUrl}/v1/tasks`, {
          method: 'POST',
          headers: { authorization: `Bearer ${accountKey}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            workflow_id: 'demo_agent',
            user_id: 'demo-user',
            messages: [{ role: 'user', content: 'Tell me about ByteDance' }],
          }),
        });
        return submitted.status === 202 && ((await submitted.json()) as { trace_id: string }).trace_id;
      },
      { timeoutMs: 30_000, intervalMs: 250, description: 'a submission accepted after the restart' },
    );
    const events = await (
      await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/events`, {
        headers: { authorization: `Bearer ${accountKey}` },
      })
    ).text();
    expect(events).toMatch(/event: done/);
    expect(events).toContain('ByteDance Ltd.');
    expect(mesh.child.exitCode).toBeNull();
    expect(mesh.output()).not.toContain('stopping the mesh');
  });
});
