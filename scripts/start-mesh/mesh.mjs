// The mesh npm start runs, on a Node.js >= 22.12 (it loads the built workspace packages): the data
// directory's state when there is one (data-dir.mjs); NATS from the source nats-source.mjs chose, with
// this run's users (nats-server.mjs); provisioning; every service built in services/*, each with its own
// metrics port; without MODEL_BASE_URL a clearly labelled demo (scripted model, company-lookup API, agent
// and plugin, the model's credential for the whole demo account, an account API key); then how to use
// it (doors.mjs). Every process it starts belongs to process-tree.mjs, which stops them all.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { openState } from './data-dir.mjs';
import { registerRecallDemo, startRecallDemoUpstreams } from './demo-recall.mjs';
import { printDoors } from './doors.mjs';
import { startNats } from './nats-server.mjs';
import { say } from './output.mjs';
import { freePort } from './ports.mjs';
import { exitOf, isStopping, onStop, spawnNode, StoppingError } from './process-tree.mjs';

// The account infra/nats/accounts.conf has an example upstream and tenant user for.
const DEMO_ACCOUNT = 'acme';

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

async function meshKeys(state) {
  const { generateVaultKeyPair } = await import('@agentmesh/vault');
  const keys = {};
  const lifetime = state.dir ? `kept in ${state.dir}` : 'for this run';
  if (!process.env.VAULT_PUBLIC_KEY || !process.env.VAULT_PRIVATE_KEYS) {
    Object.assign(
      keys,
      state.remember('vault keys', () => {
        const pair = generateVaultKeyPair('local');
        return {
          VAULT_KEY_ID: pair.kid,
          VAULT_PUBLIC_KEY: pair.publicKey,
          VAULT_PRIVATE_KEYS: `${pair.kid}:${pair.privateKey}`,
        };
      }),
    );
    say(`a vault key pair ${lifetime} (set VAULT_* to keep your own)`);
  }
  if (!process.env.CREDENTIALS_MASTER_KEY) {
    Object.assign(
      keys,
      state.remember('credentials master key', () => ({
        CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
        CREDENTIALS_MASTER_KEY_ID: 'local',
      })),
    );
    say(
      state.dir
        ? `a credentials master key kept in ${state.dir}: stored credentials stay readable across restarts`
        : 'a credentials master key for this run: stored credentials will not outlive it',
    );
  }
  return keys;
}

/** Passes a service's output on, and resolves once it logs that it is ready. */
function serviceReady(child) {
  return new Promise((resolve) => {
    let tail = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      process.stdout.write(chunk);
      tail = (tail + chunk).slice(-4096);
      if (tail.includes('service ready')) resolve();
    });
  });
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

async function startDemo(gatewayUrl, adminKey, accountKey, withRecall) {
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
  // Account-wide: the console, OpenAI and MCP doors submit as users of their own.
  await admin('PUT', `/accounts/${DEMO_ACCOUNT}/credentials/DEMO_MODEL_KEY`, {
    value: `demo-model-key-${randomBytes(12).toString('base64url')}`,
  });
  // The account key the doors print, through the management API (registering a kept key again is harmless).
  await admin('POST', '/api-keys', {
    account_id: DEMO_ACCOUNT,
    label: 'npm start demo',
    api_key: accountKey,
  });
  // PUT: a kept data directory has them from an earlier run, pointing at that run's demo servers.
  await admin('PUT', '/plugins/demo_company_lookup', {
    schema_version: 'v1',
    name: 'demo_company_lookup',
    title: 'Demo company lookup',
    description: 'Looks up basic facts about a company by keyword (demo API on loopback).',
    parameters: { type: 'object', properties: { keyword: { type: 'string' } }, required: ['keyword'] },
    execution: { method: 'GET', base_url: `${api.url}/companies`, param_placement: 'query' },
  });
  await admin('PUT', '/agents/demo_agent', {
    workflow_id: 'demo_agent',
    system_prompt: 'You answer questions about companies.',
    model: { model_name: 'demo-scripted', base_url: model.baseUrl, api_key_credential: 'DEMO_MODEL_KEY' },
    tools: ['demo_company_lookup'],
  });
  say(`DEMO MODEL (scripted, not an LLM) at ${model.baseUrl}; demo API at ${api.url}`);
  say(
    `demo agent \`demo_agent\` with plugin \`demo_company_lookup\` registered; its model credential serves every user of account \`${DEMO_ACCOUNT}\``,
  );
  if (withRecall) await registerRecallDemo(admin);
}

/** Starts everything; resolves once the mesh is up and its usage printed. */
export async function runMesh({ root, natsSource, dataDir }) {
  const state = openState(dataDir);
  const nats = await startNats(root, natsSource, state);
  await provision(root, nats);
  const keys = await meshKeys(state);
  const port = process.env.HTTP_PORT ?? '8080';
  const gatewayUrl = `http://127.0.0.1:${port}`;
  const demo = !process.env.MODEL_BASE_URL;
  // An admin key unless you bring your own; there is no way in without a key.
  const adminKey = process.env.ADMIN_API_KEYS
    ? undefined
    : state.remember('admin key', () => `am_admin_${randomBytes(24).toString('base64url')}`);
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
    // Webhook endpoints on this machine (a local receiver under development) in the demo too.
    WEBHOOK_ALLOW_HOSTS: process.env.WEBHOOK_ALLOW_HOSTS ?? (demo ? '127.0.0.1' : ''),
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
  // Each service its own Prometheus port: one shared port would let only the first bind.
  const metrics = {};
  for (const name of started) metrics[name] = await freePort();
  const ready = [];
  for (const name of started) {
    const child = spawnNode(
      name,
      process.execPath,
      [join(root, 'services', name, 'dist', 'index.js')],
      { env: { ...env, ...natsLogin(nats, name), METRICS_PORT: String(metrics[name]) } },
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    ready.push(serviceReady(child));
  }
  say(`NATS at ${nats.url}; services: ${started.join(', ')}, each logged in as its own NATS user`);
  await waitForGateway(gatewayUrl, 30_000);
  // The doors are printed once every service is ready: an executor announces its native tools (recall's)
  // before it says so, and a task sent before that would find no executor for them.
  const allReady = await Promise.race([
    Promise.all(ready).then(() => true),
    new Promise((resolve) => setTimeout(() => resolve(false), 60_000).unref()),
  ]);
  if (!allReady) say('not every service said it was ready within 60 s; going on (see their logs above)');
  if (process.env.TRUST_ACCOUNT_HEADERS === 'true') {
    say('TRUST_ACCOUNT_HEADERS=true: any local process may act as any account without a key');
  }
  let accountKey;
  if (demo && adminKey) {
    accountKey = state.remember('account key', () => `am_${randomBytes(32).toString('base64url')}`);
    await startDemo(gatewayUrl, adminKey, accountKey, recallDemo !== undefined);
    if (state.kept)
      say("the demo agent and tool of the earlier run now point at this run's demo model and API");
  } else if (demo)
    say('demo not registered: it needs the admin key this script generates (unset ADMIN_API_KEYS)');
  if (isStopping()) throw new StoppingError('stopping');
  printDoors({ root, gatewayUrl, adminKey, accountKey, account: DEMO_ACCOUNT, nats, metrics, state });
}
