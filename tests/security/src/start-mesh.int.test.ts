/**
 * Issue 8, finding 12: `npm start` (scripts/start-mesh.mjs, run here on the built services) is not
 * open. Its NATS refuses anonymous clients, its gateway refuses callers without a key (account headers
 * are not trusted), and the admin key and example it prints are what works.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { findFreePort, waitFor } from '@agentmesh/testkit';
import { AuthorizationError, connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../../scripts/start-mesh.mjs', import.meta.url));

let child: ChildProcess;
let output = '';
let gatewayUrl: string;

beforeAll(async () => {
  const port = await findFreePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  // Nothing of this shell's NATS or gateway settings: the script's own defaults are under test.
  const env: NodeJS.ProcessEnv = { ...process.env, HTTP_PORT: String(port) };
  for (const name of [
    'NATS_URL',
    'NATS_USER',
    'NATS_PASSWORD',
    'TRUST_ACCOUNT_HEADERS',
    'ADMIN_API_KEYS',
    'MODEL_BASE_URL',
  ])
    delete env[name];
  // --no-build: the test pipeline built the services already.
  child = spawn(process.execPath, [script, '--no-build'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  await waitFor(() => output.includes('press Ctrl-C to stop'), {
    timeoutMs: 90_000,
    description: `start-mesh to come up; output so far:\n${output}`,
  });
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGINT');
    await once(child, 'exit');
  }
});

const printed = (pattern: RegExp): string => {
  const match = pattern.exec(output);
  if (!match?.[1]) throw new Error(`not printed: ${pattern}\n${output}`);
  return match[1];
};

describe('npm start', () => {
  it('starts NATS with users: an anonymous client is refused', async () => {
    const natsUrl = printed(/NATS at (nats:\/\/127\.0\.0\.1:\d+)/);
    await expect(connect({ servers: natsUrl, maxReconnectAttempts: 0 })).rejects.toBeInstanceOf(
      AuthorizationError,
    );
  });

  it('starts the gateway without trusted account headers: a keyless caller cannot create an API key', async () => {
    const response = await fetch(`${gatewayUrl}/v1/admin/api-keys`, {
      method: 'POST',
      headers: { 'x-account-id': 'anyone', 'content-type': 'application/json' },
      body: JSON.stringify({ account_id: 'anyone' }),
    });
    expect(response.status).toBe(401);
  });

  it('prints an admin key with which a task of the account in x-account-id runs to done, and an account key the printed curl line uses', async () => {
    const adminKey = printed(/admin key for this run[^:]*: (\S+)/);
    const accountKey = printed(/account API key of account `acme`[^:]*: (\S+)/);
    expect(output).toContain(`authorization: Bearer ${accountKey}`);
    const submitted = await fetch(`${gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${adminKey}`,
        'x-account-id': 'acme',
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        workflow_id: 'demo_agent',
        user_id: 'demo-user',
        messages: [{ role: 'user', content: 'Tell me about ByteDance' }],
      }),
    });
    expect(submitted.status).toBe(202);
    const { trace_id } = (await submitted.json()) as { trace_id: string };
    const events = await fetch(`${gatewayUrl}/v1/tasks/${trace_id}/events`, {
      headers: { authorization: `Bearer ${adminKey}`, 'x-account-id': 'acme' },
    });
    expect(await events.text()).toMatch(/event: done/);
  });

  it('on Ctrl-C, stops everything and exits 0', async () => {
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
  });
});
