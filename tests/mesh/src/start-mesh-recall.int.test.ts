/**
 * Seed 004 out of the box: `npm start` (demo, no upstreams of one's own) starts recall on its labelled demo
 * ontology-query and operator tool-box upstreams and registers `demo_recall_agent`; a task to that agent
 * recalls the demo action, gets it as a dynamic tool, calls it, the demo operator API answers, and the task
 * is done. The npm start process group is stopped with SIGINT and nothing of it is left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { findFreePort, waitFor } from '@agentmesh/testkit';
import { afterAll, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

let child: ChildProcess | undefined;
let exit: Promise<unknown> | undefined;

afterAll(async () => {
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    // The whole process group, as Ctrl-C in a shell: npm, the start script, NATS and the services.
    process.kill(-child.pid, 'SIGINT');
    await exit;
  }
});

it('when npm start runs the demo, a task to demo_recall_agent recalls a dynamic tool, calls it on the demo operator API, and is done', async () => {
  const port = await findFreePort();
  const env: NodeJS.ProcessEnv = { ...process.env, HTTP_PORT: String(port) };
  // The script's own defaults are under test: no NATS, keys, model or recall upstreams of this shell.
  for (const name of [
    'NATS_URL',
    'NATS_USER',
    'NATS_PASSWORD',
    'NATS_PORT',
    'TRUST_ACCOUNT_HEADERS',
    'ADMIN_API_KEYS',
    'MODEL_BASE_URL',
    'ONTOLOGY_QUERY_URL',
    'OPERATOR_INTEGRATION_URL',
    'API_URL_TEMPLATE',
  ])
    delete env[name];
  child = spawn('npm', ['start', '--', '--no-build'], {
    cwd: root,
    env,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  let exited = false;
  exit = new Promise((resolve) => child!.once('close', resolve)).then(() => (exited = true));
  await waitFor(() => exited || output.includes('press Ctrl-C to stop'), {
    timeoutMs: 90_000,
    description: 'npm start to come up',
  });
  expect(exited, output).toBe(false);
  expect(output).toMatch(/DEMO recall upstreams .*ontology-query at http:\/\/127\.0\.0\.1:\d+/);
  expect(output).toMatch(/services: [^\n]*\brecall\b/);

  const adminKey = /\bam_admin_[A-Za-z0-9_-]+/.exec(output)?.[0];
  expect(adminKey, output).toBeDefined();
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${adminKey}`, 'x-account-id': 'acme' };
  const submitted = await fetch(`${gatewayUrl}/v1/tasks`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({
      workflow_id: 'demo_recall_agent',
      user_id: 'demo-user',
      messages: [{ role: 'user', content: 'What can be done for disease_000001?' }],
    }),
  });
  expect(submitted.status).toBe(202);
  const { trace_id } = (await submitted.json()) as { trace_id: string };
  const stream = await (await fetch(`${gatewayUrl}/v1/tasks/${trace_id}/events`, { headers })).text();
  const events = [...stream.matchAll(/^data: (.*)$/gm)].map(
    (match) => JSON.parse(match[1]!) as { type: string; data: Record<string, unknown> },
  );

  const starts = events.filter((event) => event.type === 'tool_start').map((event) => event.data.tool);
  expect(starts, stream).toEqual(['recall_actions', 'demo_generate_treatment_plan']);
  const results = events.filter((event) => event.type === 'tool_result');
  expect(results.map((event) => event.data.ok)).toEqual([true, true]);
  expect(results[0]!.data.result).toMatchObject({
    _dynamic_tools: [{ name: 'demo_generate_treatment_plan' }],
  });
  expect(results[1]!.data.result).toMatchObject({
    source: '[DEMO OPERATOR API]',
    disease_id: 'disease_000001',
  });
  expect(events.at(-1)).toMatchObject({ type: 'done' });
  expect(String(events.at(-1)!.data.message)).toContain('[DEMO OPERATOR API]');

  process.kill(-child.pid!, 'SIGINT');
  await exit;
});
