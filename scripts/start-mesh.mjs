#!/usr/bin/env node
// Runs the whole local mesh: NATS (the NATS_URL given, else the machine's nats-server binary with
// JetStream in a temporary store, else a container from $AGENTMESH_NATS_IMAGE), then every service
// built in services/*. Keys not given in the environment are generated for this run only.
// Without MODEL_BASE_URL it also starts a clearly labelled DEMO model (the test kit's scripted
// OpenAI-compatible server, not an LLM), a demo company-lookup API, and registers a demo agent and
// plugin, then prints how to submit a task with curl and watch its events.
// Ctrl-C stops the services (each drains) and then NATS.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const services = [];
const cleanups = [];

function say(message) {
  process.stdout.write(`[mesh] ${message}\n`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function waitForPort(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on 127.0.0.1:${port}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

async function startNats() {
  if (process.env.NATS_URL) {
    say(`using NATS at ${process.env.NATS_URL}`);
    return process.env.NATS_URL;
  }
  const port = await freePort();
  if (onPath('nats-server')) {
    const store = mkdtempSync(join(tmpdir(), 'agentmesh-nats-'));
    const nats = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], {
      stdio: 'ignore',
    });
    cleanups.push(() => {
      nats.kill('SIGTERM');
      rmSync(store, { recursive: true, force: true });
    });
    say(`started nats-server (JetStream store ${store})`);
  } else if (onPath('docker') && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
    const image = process.env.AGENTMESH_NATS_IMAGE ?? 'nats:2.10';
    const run = spawnSync(
      'docker',
      ['run', '-d', '--rm', '--network', 'host', image, '-a', '127.0.0.1', '-p', String(port), '-js'],
      {
        encoding: 'utf8',
      },
    );
    if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr}`);
    const id = run.stdout.trim();
    cleanups.push(() => spawnSync('docker', ['rm', '-f', id], { stdio: 'ignore' }));
    say(`started NATS container ${id.slice(0, 12)} from ${image}`);
  } else {
    throw new Error(
      'no NATS: set NATS_URL, install nats-server, or run a Docker engine (see infra/setup-machine.sh)',
    );
  }
  await waitForPort(port, 15_000);
  return `nats://127.0.0.1:${port}`;
}

function startService(name, env) {
  const entry = join(root, 'services', name, 'dist', 'index.js');
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.on('exit', (code, signal) => {
    if (!stopping) say(`${name} exited (code ${code}, signal ${signal})`);
  });
  services.push(child);
}

let stopping = false;
async function stopAll() {
  if (stopping) return;
  stopping = true;
  say('stopping');
  // Services first, so that each can drain its NATS connection; NATS last.
  await Promise.all(
    services.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', resolve);
          child.kill('SIGTERM');
        }),
    ),
  );
  for (const cleanup of cleanups) cleanup();
  process.exit(0);
}
process.on('SIGINT', stopAll);
process.on('SIGTERM', stopAll);

async function meshKeys() {
  const { generateVaultKeyPair } = await import('@agentmesh/vault');
  const keys = {};
  if (!process.env.VAULT_PUBLIC_KEY || !process.env.VAULT_PRIVATE_KEYS) {
    const pair = generateVaultKeyPair('local');
    Object.assign(keys, {
      VAULT_KEY_ID: pair.kid,
      VAULT_PUBLIC_KEY: pair.publicKey,
      VAULT_PRIVATE_KEYS: `${pair.kid}:${pair.privateKey}`,
    });
    say('generated a vault key pair for this run (set VAULT_* to keep your own)');
  }
  if (!process.env.CREDENTIALS_MASTER_KEY) {
    Object.assign(keys, {
      CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
      CREDENTIALS_MASTER_KEY_ID: 'local',
    });
    say('generated a credentials master key for this run: stored credentials will not outlive it');
  }
  return keys;
}

async function waitForGateway(url, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the gateway at ${url} did not become ready`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const DEMO_ACCOUNT = 'demo';

async function startDemo(gatewayUrl) {
  const { startRecordingApi, startScriptedModel } = await import('@agentmesh/testkit');
  const api = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/companies',
        reply: (request) => ({
          status: 200,
          body: { query: request.query.keyword, name: 'ByteDance Ltd.', founded: 2012, city: 'Beijing' },
        }),
      },
    ],
  });
  const model = await startScriptedModel({
    respond: (request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === 'tool') {
        return { content: `[DEMO MODEL] The lookup tool answered: ${last.content}`, chunkSize: 12 };
      }
      return { toolCalls: [{ name: 'demo_company_lookup', arguments: { keyword: 'ByteDance' } }] };
    },
  });
  cleanups.push(
    () => void model.stop(),
    () => void api.stop(),
  );
  const admin = async (method, path, body) => {
    const response = await fetch(`${gatewayUrl}/v1/admin${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-account-id': DEMO_ACCOUNT },
      body: JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  };
  await admin('PUT', `/accounts/${DEMO_ACCOUNT}/users/demo-user/credentials/DEMO_MODEL_KEY`, {
    value: 'demo',
  });
  await admin('POST', '/plugins', {
    schema_version: 'v1',
    name: 'demo_company_lookup',
    title: 'Demo company lookup',
    description: 'Looks up basic facts about a company by keyword (demo API on loopback).',
    parameters: { type: 'object', properties: { keyword: { type: 'string' } }, required: ['keyword'] },
    execution: { method: 'GET', base_url: `${api.url}/companies`, param_placement: 'query' },
  });
  await admin('POST', '/agents', {
    workflow_id: 'demo_agent',
    system_prompt: 'You answer questions about companies.',
    model: { model_name: 'demo-scripted', base_url: model.baseUrl, api_key_credential: 'DEMO_MODEL_KEY' },
    tools: ['demo_company_lookup'],
  });
  say(`DEMO MODEL (scripted, not an LLM) at ${model.baseUrl}; demo API at ${api.url}`);
  say('demo agent `demo_agent` with plugin `demo_company_lookup` registered for account `demo`');
}

const natsUrl = await startNats();
const keys = await meshKeys();
const port = process.env.HTTP_PORT ?? '8080';
const gatewayUrl = `http://127.0.0.1:${port}`;
const demo = !process.env.MODEL_BASE_URL;
const env = {
  NATS_URL: natsUrl,
  ...keys,
  HTTP_PORT: port,
  // Locally, callers name their account in x-account-id (the gateway binds 127.0.0.1 only).
  TRUST_ACCOUNT_HEADERS: process.env.TRUST_ACCOUNT_HEADERS ?? 'true',
  OUTBOUND_ALLOW_HOSTS: process.env.OUTBOUND_ALLOW_HOSTS ?? (demo ? '127.0.0.1' : ''),
  // The model endpoint's own allow-list: the demo model runs on loopback; a local model of yours needs its host here.
  MODEL_ALLOW_HOSTS: process.env.MODEL_ALLOW_HOSTS ?? (demo ? '127.0.0.1' : ''),
};
const names = readdirSync(join(root, 'services')).filter((name) =>
  existsSync(join(root, 'services', name, 'dist', 'index.js')),
);
const started = names.filter((name) => {
  if (name === 'recall' && !process.env.ONTOLOGY_QUERY_URL) {
    say('recall not started: it needs ONTOLOGY_QUERY_URL and OPERATOR_INTEGRATION_URL (its upstreams)');
    return false;
  }
  return true;
});
for (const name of started) startService(name, env);
say(`NATS at ${natsUrl}; services: ${started.join(', ')}`);
await waitForGateway(gatewayUrl, 30_000);
if (demo) await startDemo(gatewayUrl);
say(`gateway at ${gatewayUrl}`);
say('submit a task:');
process.stdout.write(
  `  curl -s -X POST ${gatewayUrl}/v1/tasks -H 'content-type: application/json' -H 'x-account-id: ${DEMO_ACCOUNT}' \\\n` +
    `    -d '{"workflow_id":"demo_agent","user_id":"demo-user","messages":[{"role":"user","content":"Tell me about ByteDance"}]}'\n`,
);
say('then watch its events (Server-Sent Events) with the trace_id it returned:');
process.stdout.write(
  `  curl -N ${gatewayUrl}/v1/tasks/<trace_id>/events -H 'x-account-id: ${DEMO_ACCOUNT}'\n`,
);
say('or follow them on NATS: subscribe to mesh.events.demo.<trace_id>');
say('or do both with the CLI:');
process.stdout.write(
  `  npx agentmesh --url ${gatewayUrl} --account ${DEMO_ACCOUNT} submit --workflow demo_agent --user demo-user --message 'Tell me about ByteDance' --follow\n`,
);
say('press Ctrl-C to stop');
