// The mesh npm start runs, on a Node.js >= 22.12 (it loads the built workspace packages): NATS from the
// source nats-source.mjs chose, with this run's users; provisioning; every service built in services/*;
// without MODEL_BASE_URL a clearly labelled demo (scripted model, company-lookup API, agent and plugin);
// then how to use it. Every process it starts belongs to process-tree.mjs, which stops them all.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerRecallDemo, startRecallDemoUpstreams } from './demo-recall.mjs';
import { say } from './output.mjs';
import {
  exitOf,
  finallyOnStop,
  isStopping,
  onStop,
  spawnNode,
  spawnProcess,
  StoppingError,
} from './process-tree.mjs';

// The account infra/nats/accounts.conf has an example upstream and tenant user for.
const DEMO_ACCOUNT = 'acme';

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
      if (isStopping()) return reject(new StoppingError('stopping'));
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline)
          reject(new Error(`NATS did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000} s`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Major.minor of a `nats-server --version` output, e.g. [2, 9]; undefined when unreadable. */
function serverVersion(output) {
  const match = /v?(\d+)\.(\d+)\.\d+/.exec(output ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

const NATS_DIR_PREFIX = 'agentmesh-nats-';
const OWNER_FILE = 'start-mesh.pid';

/**
 * Removes the NATS directories (config and JetStream store) of earlier runs that were killed before
 * they could remove their own: those whose start script is no longer running.
 */
function removeOrphanedNatsDirs() {
  for (const name of readdirSync(tmpdir()).filter((entry) => entry.startsWith(NATS_DIR_PREFIX))) {
    const dir = join(tmpdir(), name);
    let owner;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
      process.kill(owner, 0);
    } catch (error) {
      // ESRCH: its start script is gone. No owner file: not ours to judge; EPERM: someone else's, alive.
      if (owner && error?.code === 'ESRCH') rmSync(dir, { recursive: true, force: true });
    }
  }
}

/**
 * A config directory for this run: infra/nats/accounts.conf, the JetStream durability include the
 * server understands (`sync_interval: always` needs 2.12+), and a server config on `port` with the
 * store under the directory.
 */
function writeNatsConfig(root, port, version) {
  removeOrphanedNatsDirs();
  const dir = mkdtempSync(join(tmpdir(), NATS_DIR_PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  finallyOnStop(() => rmSync(dir, { recursive: true, force: true }));
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
async function startNats(root, source) {
  if (source.kind === 'url') {
    say(
      `using NATS at ${source.url.replace(/\/\/[^@/]*@/g, '//')} (services log in with the NATS_* variables you set)`,
    );
    return { url: source.url, passwords: undefined };
  }
  const port = process.env.NATS_PORT ? Number(process.env.NATS_PORT) : await freePort();
  // The users of infra/nats/accounts.conf, each with a password generated for this run (plain base64url,
  // so the printed examples can be pasted into a shell); nats-server reads them from its environment.
  const { INFRA_NATS_USERS, infraPasswordEnvironment } = await import('@agentmesh/testkit');
  const passwords = Object.fromEntries(
    INFRA_NATS_USERS.map((user) => [user, randomBytes(18).toString('base64url')]),
  );
  const passwordEnv = infraPasswordEnvironment(passwords);
  const env = { ...process.env, ...passwordEnv };
  const stdio = 'ignore';
  if (source.kind === 'binary') {
    const version = serverVersion(spawnSync(source.path, ['--version'], { encoding: 'utf8' }).stdout);
    const dir = writeNatsConfig(root, port, version);
    spawnProcess('nats-server', source.path, ['-c', join(dir, 'mesh.conf')], { stdio, env }, { last: true });
    say(`started ${source.path} with this run's users (config and JetStream store in ${dir})`);
  } else {
    const image = process.env.AGENTMESH_NATS_IMAGE ?? 'nats:2.10';
    const version = serverVersion(
      spawnSync(source.docker, ['run', '--rm', image, '--version'], { encoding: 'utf8' }).stdout,
    );
    const dir = writeNatsConfig(root, port, version);
    const name = `agentmesh-nats-${randomBytes(4).toString('hex')}`;
    // Attached (not -d): the container stops when this `docker run` does (it passes SIGTERM on).
    spawnProcess(
      'NATS container',
      source.docker,
      [
        'run',
        '--rm',
        '--name',
        name,
        '--network',
        'host',
        '-v',
        `${dir}:${dir}`,
        ...Object.keys(passwordEnv).flatMap((variable) => ['-e', variable]),
        image,
        '-c',
        join(dir, 'mesh.conf'),
      ],
      { stdio, env },
      { last: true },
    );
    finallyOnStop(() => spawnSync(source.docker, ['rm', '-f', name], { stdio: 'ignore' }));
    say(`started NATS container ${name} from ${image} with this run's users`);
  }
  await waitForPort(port, 15_000);
  return { url: `nats://127.0.0.1:${port}`, passwords };
}

/** The NATS login of one user of this run (nothing when NATS_URL was given). */
function natsLogin(nats, user) {
  return nats.passwords ? { NATS_USER: user, NATS_PASSWORD: nats.passwords[user] } : {};
}

/** Creates the streams and buckets as the provisioner; the services' users may not. */
async function provision(root, nats) {
  if (!nats.passwords) return;
  const child = spawnNode(
    'provisioner',
    process.execPath,
    [join(root, 'services', 'gateway', 'dist', 'provision.js')],
    { env: { ...process.env, NATS_URL: nats.url, ...natsLogin(nats, 'provisioner') } },
    { oneShot: true },
  );
  const [code, signal] = await exitOf(child);
  if (isStopping()) throw new StoppingError('stopping');
  if (code !== 0)
    throw new Error(`provisioning the streams and buckets failed (${signal ?? `exit ${code}`})`);
}

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
    if (isStopping()) throw new StoppingError('stopping');
    try {
      if ((await fetch(`${url}/readyz`, { signal: globalThis.AbortSignal.timeout(2_000) })).ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(`the gateway at ${url} did not become ready within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function startDemo(gatewayUrl, adminKey, withRecall) {
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
  onStop(() => api.stop());
  const model = await startScriptedModel({
    respond: (request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === 'tool') {
        return { content: `[DEMO MODEL] The lookup tool answered: ${last.content}`, chunkSize: 12 };
      }
      return { toolCalls: [{ name: 'demo_company_lookup', arguments: { keyword: 'ByteDance' } }] };
    },
  });
  onStop(() => model.stop());
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
  // Not a word the answer may contain: the mesh redacts a credential's value wherever it appears.
  await admin('PUT', `/accounts/${DEMO_ACCOUNT}/users/demo-user/credentials/DEMO_MODEL_KEY`, {
    value: `demo-model-key-${randomBytes(12).toString('base64url')}`,
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
  if (withRecall) await registerRecallDemo(admin);
}

function printUsage({ gatewayUrl, adminKey, nats }) {
  const auth = adminKey ?? '<one of your ADMIN_API_KEYS>';
  say(`gateway at ${gatewayUrl} (HTTP_PORT sets its port)`);
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
  say('or do both with the CLI, in a shell with these variables:');
  process.stdout.write(
    `  export AGENTMESH_URL=${gatewayUrl} AGENTMESH_API_KEY='${auth}'\n` +
      `  npx agentmesh --account ${DEMO_ACCOUNT} submit --workflow demo_agent --user demo-user --message 'Tell me about ByteDance' --follow\n`,
  );
  if (nats.passwords) {
    const tenant = `tenant-${DEMO_ACCOUNT}`;
    const upstream = `upstream-${DEMO_ACCOUNT}`;
    // With core NATS only, the subscription must exist before the task does: the client picks the trace_id.
    const traceId = randomBytes(16).toString('hex');
    say(
      `or on NATS with the nats CLI, without losing an event: subscribe first, as the ${DEMO_ACCOUNT} tenant, to a trace_id you choose (a new one per task), then submit it from a second shell as the ${DEMO_ACCOUNT} upstream:`,
    );
    process.stdout.write(
      `  nats -s ${nats.url} --user ${tenant} --password '${nats.passwords[tenant]}' sub 'mesh.events.${DEMO_ACCOUNT}.${traceId}'\n` +
        `  nats -s ${nats.url} --user ${upstream} --password '${nats.passwords[upstream]}' --inbox-prefix _INBOX_upstream_${DEMO_ACCOUNT} \\\n` +
        `    req mesh.gateway.submit.${DEMO_ACCOUNT} '{"trace_id":"${traceId}","workflow_id":"demo_agent","user_id":"demo-user","messages":[{"role":"user","content":"Tell me about ByteDance"}]}'\n`,
    );
  }
  say('press Ctrl-C to stop');
}

/** Starts everything; resolves once the mesh is up and its usage printed. */
export async function runMesh({ root, natsSource }) {
  const nats = await startNats(root, natsSource);
  await provision(root, nats);
  const keys = await meshKeys();
  const port = process.env.HTTP_PORT ?? '8080';
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const demo = !process.env.MODEL_BASE_URL;
  // An admin key for this run unless you bring your own; there is no way in without a key.
  const adminKey = process.env.ADMIN_API_KEYS
    ? undefined
    : `am_admin_${randomBytes(24).toString('base64url')}`;
  // Recall's upstreams: yours (ONTOLOGY_QUERY_URL), else in the demo the labelled demo ones.
  const recallDemo =
    demo && adminKey && !process.env.ONTOLOGY_QUERY_URL ? await startRecallDemoUpstreams() : undefined;
  const env = {
    ...process.env,
    NATS_URL: nats.url,
    ...keys,
    HTTP_PORT: port,
    ...(adminKey ? { ADMIN_API_KEYS: adminKey } : {}),
    ...recallDemo,
    OUTBOUND_ALLOW_HOSTS: process.env.OUTBOUND_ALLOW_HOSTS ?? (demo ? '127.0.0.1' : ''),
    // The model endpoint's own allow-list: the demo model runs on loopback; a local model of yours needs its host here.
    MODEL_ALLOW_HOSTS: process.env.MODEL_ALLOW_HOSTS ?? (demo ? '127.0.0.1' : ''),
  };
  const names = readdirSync(join(root, 'services')).filter((name) =>
    existsSync(join(root, 'services', name, 'dist', 'index.js')),
  );
  const started = names.filter((name) => {
    if (name === 'recall' && !env.ONTOLOGY_QUERY_URL) {
      say('recall not started: it needs ONTOLOGY_QUERY_URL and OPERATOR_INTEGRATION_URL (its upstreams)');
      return false;
    }
    return true;
  });
  for (const name of started) {
    spawnNode(name, process.execPath, [join(root, 'services', name, 'dist', 'index.js')], {
      env: { ...env, ...natsLogin(nats, name) },
    });
  }
  say(`NATS at ${nats.url}; services: ${started.join(', ')}, each logged in as its own NATS user`);
  await waitForGateway(gatewayUrl, 30_000);
  if (process.env.TRUST_ACCOUNT_HEADERS === 'true') {
    say('TRUST_ACCOUNT_HEADERS=true: any local process may act as any account without a key');
  }
  if (demo && adminKey) await startDemo(gatewayUrl, adminKey, recallDemo !== undefined);
  else if (demo)
    say('demo not registered: it needs the admin key this script generates (unset ADMIN_API_KEYS)');
  if (isStopping()) throw new StoppingError('stopping');
  printUsage({ gatewayUrl, adminKey, nats });
}
