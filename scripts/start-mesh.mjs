#!/usr/bin/env node
// Runs the whole local mesh: NATS (the NATS_URL given, else the machine's nats-server binary with
// JetStream in a temporary store, else a container from $AGENTMESH_NATS_IMAGE), then every service
// built in services/*. Nothing is open: a NATS server started here loads infra/nats/accounts.conf with
// passwords generated for this run (each service logs in as its own user; the provisioner creates the
// streams and buckets first), and the gateway takes an admin key generated for this run (printed) and
// no unauthenticated caller (TRUST_ACCOUNT_HEADERS stays off unless you set it). Keys not given in the
// environment are generated for this run only.
// Without MODEL_BASE_URL it also starts a clearly labelled DEMO model (the test kit's scripted
// OpenAI-compatible server, not an LLM), a demo company-lookup API, and registers a demo agent and
// plugin, then prints how to submit a task with curl and watch its events.
// Ctrl-C stops the services (each drains) and then NATS.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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

/** Major.minor of a `nats-server --version` output, e.g. [2, 9]; undefined when unreadable. */
function serverVersion(output) {
  const match = /v?(\d+)\.(\d+)\.\d+/.exec(output ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * A config directory for this run: infra/nats/accounts.conf, the JetStream durability include the
 * server understands (`sync_interval: always` needs 2.12+), and a server config on `port` with the
 * store under the directory.
 */
function writeNatsConfig(port, version) {
  const dir = mkdtempSync(join(tmpdir(), 'agentmesh-nats-'));
  const infra = join(root, 'infra', 'nats');
  copyFileSync(join(infra, 'accounts.conf'), join(dir, 'accounts.conf'));
  const durable = version !== undefined && (version[0] > 2 || (version[0] === 2 && version[1] >= 12));
  copyFileSync(
    join(infra, durable ? 'jetstream-durability.conf' : 'jetstream-durability.pre-2.12.conf'),
    join(dir, 'jetstream-durability.conf'),
  );
  if (!durable) {
    say('nats-server is older than 2.12: JetStream keeps its lazy fsync here (fine for development only)');
  }
  writeFileSync(
    join(dir, 'mesh.conf'),
    `listen: 127.0.0.1:${port}\n` +
      `jetstream {\n  store_dir: ${JSON.stringify(join(dir, 'store'))}\n  include ./jetstream-durability.conf\n}\n` +
      'include ./accounts.conf\n',
  );
  return dir;
}

/** Starts NATS with this run's users, or uses NATS_URL; resolves with its URL and the users' passwords. */
async function startNats() {
  if (process.env.NATS_URL) {
    say(
      `using NATS at ${process.env.NATS_URL.replace(/\/\/[^@/]*@/g, '//')} (services log in with the NATS_* variables you set)`,
    );
    return { url: process.env.NATS_URL, passwords: undefined };
  }
  const port = await freePort();
  // The users of infra/nats/accounts.conf, each with a password generated for this run (plain base64url,
  // so the printed examples can be pasted into a shell); nats-server reads them from its environment.
  const { INFRA_NATS_USERS, infraPasswordEnvironment } = await import('@agentmesh/testkit');
  const passwords = Object.fromEntries(
    INFRA_NATS_USERS.map((user) => [user, randomBytes(18).toString('base64url')]),
  );
  const passwordEnv = infraPasswordEnvironment(passwords);
  if (onPath('nats-server')) {
    const version = serverVersion(spawnSync('nats-server', ['--version'], { encoding: 'utf8' }).stdout);
    const dir = writeNatsConfig(port, version);
    const nats = spawn('nats-server', ['-c', join(dir, 'mesh.conf')], {
      stdio: 'ignore',
      env: { ...process.env, ...passwordEnv },
    });
    cleanups.push(() => {
      nats.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    });
    say(`started nats-server with this run's users (config and JetStream store in ${dir})`);
  } else if (onPath('docker') && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
    const image = process.env.AGENTMESH_NATS_IMAGE ?? 'nats:2.10';
    const version = serverVersion(
      spawnSync('docker', ['run', '--rm', image, '--version'], { encoding: 'utf8' }).stdout,
    );
    const dir = writeNatsConfig(port, version);
    const run = spawnSync(
      'docker',
      [
        'run',
        '-d',
        '--rm',
        '--network',
        'host',
        '-v',
        `${dir}:${dir}`,
        ...Object.keys(passwordEnv).flatMap((name) => ['-e', name]),
        image,
        '-c',
        join(dir, 'mesh.conf'),
      ],
      { encoding: 'utf8', env: { ...process.env, ...passwordEnv } },
    );
    if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr}`);
    const id = run.stdout.trim();
    cleanups.push(() => {
      spawnSync('docker', ['rm', '-f', id], { stdio: 'ignore' });
      rmSync(dir, { recursive: true, force: true });
    });
    say(`started NATS container ${id.slice(0, 12)} from ${image} with this run's users`);
  } else {
    throw new Error(
      'no NATS: set NATS_URL, install nats-server, or run a Docker engine (see infra/setup-machine.sh)',
    );
  }
  await waitForPort(port, 15_000);
  return { url: `nats://127.0.0.1:${port}`, passwords };
}

/** The NATS login of one user of this run (nothing when NATS_URL was given). */
function natsLogin(nats, user) {
  return nats.passwords ? { NATS_USER: user, NATS_PASSWORD: nats.passwords[user] } : {};
}

/** Creates the streams and buckets as the provisioner; the services' users may not. */
async function provision(nats) {
  if (!nats.passwords) return;
  const child = spawn(process.execPath, [join(root, 'services', 'gateway', 'dist', 'provision.js')], {
    env: { ...process.env, NATS_URL: nats.url, ...natsLogin(nats, 'provisioner') },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const [code] = await new Promise((resolve) => child.once('exit', (...result) => resolve(result)));
  if (code !== 0) throw new Error(`provisioning the streams and buckets failed (exit ${code})`);
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

// The account infra/nats/accounts.conf has an example upstream and tenant user for.
const DEMO_ACCOUNT = 'acme';

async function startDemo(gatewayUrl, adminKey) {
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
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${adminKey}`,
        'x-account-id': DEMO_ACCOUNT,
      },
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
  say(
    `demo agent \`demo_agent\` with plugin \`demo_company_lookup\` registered; credentials for account \`${DEMO_ACCOUNT}\``,
  );
}

const nats = await startNats();
await provision(nats);
const keys = await meshKeys();
const port = process.env.HTTP_PORT ?? '8080';
const gatewayUrl = `http://127.0.0.1:${port}`;
const demo = !process.env.MODEL_BASE_URL;
// An admin key for this run unless you bring your own; there is no way in without a key.
const adminKey = process.env.ADMIN_API_KEYS ? undefined : `am_admin_${randomBytes(24).toString('base64url')}`;
const env = {
  NATS_URL: nats.url,
  ...keys,
  HTTP_PORT: port,
  ...(adminKey ? { ADMIN_API_KEYS: adminKey } : {}),
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
for (const name of started) startService(name, { ...env, ...natsLogin(nats, name) });
say(`NATS at ${nats.url}; services: ${started.join(', ')}, each logged in as its own NATS user`);
await waitForGateway(gatewayUrl, 30_000);
if (process.env.TRUST_ACCOUNT_HEADERS === 'true') {
  say('TRUST_ACCOUNT_HEADERS=true: any local process may act as any account without a key');
}
const auth = adminKey ?? '<one of your ADMIN_API_KEYS>';
if (demo && adminKey) await startDemo(gatewayUrl, adminKey);
else if (demo)
  say('demo not registered: it needs the admin key this script generates (unset ADMIN_API_KEYS)');
say(`gateway at ${gatewayUrl}`);
if (adminKey)
  say(`admin key for this run (management API, and tasks of the account in x-account-id): ${adminKey}`);
say('submit a task:');
process.stdout.write(
  `  curl -s -X POST ${gatewayUrl}/v1/tasks -H 'authorization: Bearer ${auth}' -H 'x-account-id: ${DEMO_ACCOUNT}' \\\n` +
    `    -H 'content-type: application/json' \\\n` +
    `    -d '{"workflow_id":"demo_agent","user_id":"demo-user","messages":[{"role":"user","content":"Tell me about ByteDance"}]}'\n`,
);
say('then watch its events (Server-Sent Events) with the trace_id it returned:');
process.stdout.write(
  `  curl -N ${gatewayUrl}/v1/tasks/<trace_id>/events -H 'authorization: Bearer ${auth}' -H 'x-account-id: ${DEMO_ACCOUNT}'\n`,
);
say('or do both with the CLI:');
process.stdout.write(
  `  AGENTMESH_API_KEY=${auth} npx agentmesh --url ${gatewayUrl} --account ${DEMO_ACCOUNT} submit --workflow demo_agent --user demo-user --message 'Tell me about ByteDance' --follow\n`,
);
if (nats.passwords) {
  say(
    `or on NATS (nats CLI), as the ${DEMO_ACCOUNT} tenant following its events and the ${DEMO_ACCOUNT} upstream submitting:`,
  );
  process.stdout.write(
    `  nats -s ${nats.url} --user tenant-${DEMO_ACCOUNT} --password '${nats.passwords[`tenant-${DEMO_ACCOUNT}`]}' sub 'mesh.events.${DEMO_ACCOUNT}.>'\n` +
      `  nats -s ${nats.url} --user upstream-${DEMO_ACCOUNT} --password '${nats.passwords[`upstream-${DEMO_ACCOUNT}`]}' --inbox-prefix _INBOX_upstream_${DEMO_ACCOUNT} \\\n` +
      `    req mesh.gateway.submit.${DEMO_ACCOUNT} '{"workflow_id":"demo_agent","user_id":"demo-user","messages":[{"role":"user","content":"Tell me about ByteDance"}]}'\n`,
  );
}
say('press Ctrl-C to stop');
