/**
 * The production bundles (scripts/bundle-service.mjs, what the images of infra/docker run): each
 * service is bundled afresh into a temporary folder, then run with plain `node <bundle>` (no tsx, no
 * node_modules next to it) on a NATS server loading infra/nats/accounts.conf, each logged in as its own
 * user, with the provisioning and the credential re-encryption run from the gateway's bundle too. The
 * services must then serve: health probes, ready lines, and one task through all four of them (recall,
 * a script tool in the executor's sandbox, the scripted model).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Buckets, Streams, type TaskEvent } from '@agentmesh/protocol';
import { SseParser } from '@agentmesh/sse';
import {
  findFreePort,
  generateInfraPasswords,
  INFRA_NATS_DIR,
  infraInboxPrefix,
  infraPasswordEnvironment,
  startNats,
  startRecordingApi,
  startScriptedModel,
  startServiceProcess,
  waitFor,
  type ChatCompletionRequest,
  type InfraNatsUser,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const SERVICES = ['gateway', 'assembler', 'executor', 'recall'] as const;
type Service = (typeof SERVICES)[number];
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const ACCOUNT = 'acme';
const BOX = 'e59f35f8-65f3-46bb-b5f1-a428380b3edc';
const TOOL = '7acb8add-ecd0-45cf-bd4d-57674c3c69b0';

let work: string;
let nats: NatsServer;
let model: ScriptedModel;
let ontology: RecordingApi;
let toolbox: RecordingApi;
let collector: RecordingApi;
const started: ServiceProcess[] = [];
const services = {} as Record<Service, ServiceProcess>;
let provisioning: ServiceProcess;
let gatewayUrl: string;
let passwords: Record<InfraNatsUser, string>;
const adminKey = `am_admin_${randomBytes(12).toString('hex')}`;
const apiKey = `am_test_${randomBytes(12).toString('hex')}`;
const masterKey = randomBytes(32).toString('base64');

const bundleEntry = (service: Service, name = 'index'): string =>
  join(work, 'bundles', service, 'dist', `${name}.mjs`);

/** Runs the shared bundle script for one service into `<work>/bundles/<service>`. */
async function bundle(service: Service): Promise<void> {
  const child = spawn(
    process.execPath,
    [join(repo, 'scripts/bundle-service.mjs'), join(work, 'bundles', service)],
    {
      cwd: join(repo, 'services', service),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const [code] = (await once(child, 'close')) as [number | null];
  if (code !== 0) throw new Error(`bundling ${service} failed (${code}):\n${output}`);
}

async function start(entry: string, env: Record<string, string>): Promise<ServiceProcess> {
  const service = await startServiceProcess({ entry, env });
  started.push(service);
  return service;
}

const login = (user: InfraNatsUser) => ({
  NATS_URL: nats.url,
  NATS_USER: user,
  NATS_PASSWORD: passwords[user],
  LOG_LEVEL: 'info',
});

/** Spans exported over OTLP/HTTP protobuf (compose's protocol) to the recording collector, promptly. */
const telemetry = (service: Service) => ({
  OTEL_SERVICE_NAME: service,
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
  OTEL_BSP_SCHEDULE_DELAY: '100',
});

async function admin(method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${gatewayUrl}/v1/admin${path}`, {
    method,
    headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return response;
}

/** recall_actions first (answered by the recall service), then the script tool, then the answer. */
function scriptedAgent(request: ChatCompletionRequest) {
  const toolResults = request.body.messages.filter((message) => message.role === 'tool').length;
  if (toolResults === 0) {
    return {
      toolCalls: [
        {
          name: 'recall_actions',
          arguments: {
            kn_id: 'kn_medical',
            at_id: 'generate_treatment_plan',
            unique_identity: { disease_id: 'disease_000001' },
          },
        },
      ],
    };
  }
  if (toolResults === 1)
    return { toolCalls: [{ name: 'demo__shout', arguments: { text: 'from a bundle' } }] };
  return { content: 'Bundled and done.' };
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'mesh-bundles-'));
  await chmod(work, 0o755);
  await Promise.all(SERVICES.map((service) => bundle(service)));

  // A Node script tool, run by the executor's sandbox (whose init file the bundle must carry).
  const scriptsDir = join(work, 'scripts');
  const toolsDir = join(work, 'tools');
  await mkdir(scriptsDir, { mode: 0o755 });
  await mkdir(toolsDir, { mode: 0o755 });
  await mkdir(join(work, 'cache'), { mode: 0o755 });
  await writeFile(
    join(scriptsDir, 'shout.mjs'),
    "let raw = '';\nprocess.stdin.on('data', (c) => (raw += c));\nprocess.stdin.on('end', () => console.log(JSON.stringify({ shout: JSON.parse(raw).text.toUpperCase() })));\n",
    { mode: 0o644 },
  );
  await writeFile(
    join(toolsDir, 'shout.tool.json'),
    JSON.stringify({
      toolId: 'demo:shout',
      displayName: 'shout',
      description: 'Shouts the text back.',
      version: '1.0.0',
      handler: { type: 'external-script', scriptPath: 'shout.mjs', language: 'nodejs' },
      parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
      tags: ['demo'],
    }),
  );

  ontology = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/api/ontology-query/v1/knowledge-networks/:kn_id/action-types/:at_id',
        reply: {
          status: 200,
          body: {
            actions: [
              {
                parameters: { 'x-account-type': 'user' },
                dynamic_params: { kn_id: null },
              },
            ],
            action_source: { type: 'tool', box_id: BOX, tool_id: TOOL },
          },
        },
      },
    ],
  });
  toolbox = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: '/api/agent-operator-integration/internal-v1/tool-box/:box/tool/:tool',
        reply: {
          status: 200,
          body: {
            name: 'search_object_instance',
            description: 'Queries object instances of one object type.',
            api_spec: {
              parameters: [{ name: 'kn_id', in: 'path', required: true, schema: { type: 'string' } }],
            },
          },
        },
      },
    ],
  });
  collector = await startRecordingApi({
    routes: [{ method: 'POST', path: '/v1/traces', reply: { status: 200, body: '' } }],
  });
  model = await startScriptedModel({ respond: scriptedAgent });

  passwords = generateInfraPasswords();
  nats = await startNats({
    name: 'bundles',
    config: { dir: INFRA_NATS_DIR, file: 'accounts.conf', environment: infraPasswordEnvironment(passwords) },
    client: {
      user: 'provisioner',
      pass: passwords.provisioner,
      inboxPrefix: infraInboxPrefix('provisioner'),
    },
  });

  provisioning = await start(bundleEntry('gateway', 'provision'), login('provisioner'));
  const provisioned = await provisioning.exited;
  if (provisioned !== 0) {
    throw new Error(`provisioning failed (${provisioned}):\n${JSON.stringify(provisioning.logs)}`);
  }

  const vaultKeys = generateVaultKeyPair('k1');
  const port = await findFreePort();
  gatewayUrl = `http://127.0.0.1:${port}`;
  const credentialKeys = { CREDENTIALS_MASTER_KEY: masterKey, CREDENTIALS_MASTER_KEY_ID: 'm1' };
  const sealKeys = { VAULT_KEY_ID: vaultKeys.kid, VAULT_PUBLIC_KEY: vaultKeys.publicKey };
  const [gateway, assembler, executor, recall] = await Promise.all([
    start(bundleEntry('gateway'), {
      ...login('gateway'),
      ...telemetry('gateway'),
      ...credentialKeys,
      ...sealKeys,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      API_KEYS: `${apiKey}=${ACCOUNT}`,
      ADMIN_API_KEYS: adminKey,
    }),
    start(bundleEntry('assembler'), {
      ...login('assembler'),
      ...telemetry('assembler'),
      ...credentialKeys,
      ...sealKeys,
      TOOLS_DIR: toolsDir,
    }),
    start(bundleEntry('executor'), {
      ...login('executor'),
      ...telemetry('executor'),
      VAULT_PRIVATE_KEYS: `${vaultKeys.kid}:${vaultKeys.privateKey}`,
      OUTBOUND_ALLOW_HOSTS: '127.0.0.1,localhost',
      MODEL_ALLOW_HOSTS: '127.0.0.1',
      SCRIPTS_DIR: scriptsDir,
      SCRIPTS_CACHE_DIR: join(work, 'cache'),
    }),
    start(bundleEntry('recall'), {
      ...login('recall'),
      ...telemetry('recall'),
      ONTOLOGY_QUERY_URL: ontology.url,
      OPERATOR_INTEGRATION_URL: toolbox.url,
    }),
  ]);
  Object.assign(services, { gateway, assembler, executor, recall });
  await Promise.all(
    Object.values(services).map((service) =>
      service.waitForLog((line) => line.msg === 'service ready', 60_000),
    ),
  );
}, 240_000);

afterAll(async () => {
  await Promise.allSettled(started.map((service) => service.stop('SIGTERM')));
  await nats?.stop();
  await Promise.allSettled([model?.stop(), ontology?.stop(), toolbox?.stop(), collector?.stop()]);
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the production bundles', () => {
  it('each service runs from its bundle with plain node and says it is ready; the gateway answers its probes', async () => {
    for (const service of SERVICES) {
      expect(services[service].child.spawnargs).toEqual([process.execPath, bundleEntry(service)]);
      expect(services[service].logs.find((line) => line.msg === 'service ready')).toBeDefined();
    }
    const health = await fetch(`${gatewayUrl}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`${gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    // The console's files travel in the bundle's assets.
    const consolePage = await fetch(`${gatewayUrl}/console`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toContain('console.js');
    const consoleScript = await fetch(`${gatewayUrl}/console/console.js`);
    expect(consoleScript.status).toBe(200);
  });

  it("the provisioning in the gateway's bundle created the streams and buckets as the provisioner user", () => {
    const done = provisioning.logs.find((line) => line.msg === 'mesh resources provisioned');
    expect(done?.created).toEqual(
      expect.arrayContaining([`stream ${Streams.TASKS.name}`, `bucket ${Buckets.AGENTS}`]),
    );
  });

  it("a task runs to done through the four bundles: recall answers recall_actions, the executor's sandbox runs a script tool", async () => {
    await admin('PUT', `/accounts/${ACCOUNT}/users/u1/credentials/MODEL_KEY`, { value: 'model-key' });
    await waitFor(
      async () => {
        const listed = (await (await admin('GET', '/plugins?tag=demo')).json()) as {
          plugins: { name: string }[];
        };
        return listed.plugins.some((plugin) => plugin.name === 'demo__shout');
      },
      { timeoutMs: 20_000, description: "the script tool in the assembler's catalogue" },
    );
    await admin('POST', '/agents', {
      workflow_id: 'bundle_agent',
      model: { model_name: 'scripted', base_url: model.baseUrl, api_key_credential: 'MODEL_KEY' },
      tools: ['recall_actions', 'demo__shout'],
    });

    const submitted = await fetch(`${gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        workflow_id: 'bundle_agent',
        user_id: 'u1',
        messages: [{ role: 'user', content: 'shout it' }],
      }),
    });
    expect(submitted.status).toBe(202);
    const { trace_id } = (await submitted.json()) as { trace_id: string };
    const stream = await fetch(`${gatewayUrl}/v1/tasks/${trace_id}/events`, {
      headers: { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' },
    });
    expect(stream.status).toBe(200);
    const parser = new SseParser();
    const events = [...parser.push(await stream.text()), ...parser.end()].map(
      (message) => JSON.parse(message.data) as TaskEvent,
    );

    expect(events.at(-1)?.type).toBe('done');
    const results = events
      .filter((event) => event.type === 'tool_result')
      .map((event) => event.data as { tool: string; ok: boolean; result: unknown });
    expect(results.map((result) => [result.tool, result.ok])).toEqual([
      ['recall_actions', true],
      ['demo__shout', true],
    ]);
    expect(JSON.stringify(results[1]!.result)).toContain('FROM A BUNDLE');
    expect(ontology.requests.length).toBeGreaterThan(0);
    const answer = events
      .filter((event) => event.type === 'message_chunk')
      .map((event) => (event.data as { delta?: string }).delta ?? '')
      .join('');
    expect(answer).toBe('Bundled and done.');
  });

  it('each bundle exports its spans over OTLP (http/protobuf) to the collector', async () => {
    const exported = () => collector.requests.map((request) => request.bodyText).join('\n');
    for (const service of SERVICES) {
      // The resource's `service.name` attribute, as protobuf lays it out: key, two tags and lengths, value.
      const resource = new RegExp(`service\\.name[^]{2,6}${service}`);
      await waitFor(() => resource.test(exported()), {
        timeoutMs: 20_000,
        description: `spans of ${service} at the collector`,
      });
    }
    expect(collector.requests.every((request) => request.path === '/v1/traces')).toBe(true);
  });

  it("rekey-credentials in the gateway's bundle re-encrypts the stored credentials under a new master key", async () => {
    // Run as the gateway's user, the one that may write `mesh_credentials`, with that user's inbox.
    const rekey = await start(bundleEntry('gateway', 'rekey-credentials'), {
      ...login('gateway'),
      NATS_INBOX_PREFIX: infraInboxPrefix('gateway'),
      CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
      CREDENTIALS_MASTER_KEY_ID: 'm2',
      CREDENTIALS_PREVIOUS_KEYS: `m1:${masterKey}`,
    });
    expect(await rekey.exited, JSON.stringify(rekey.logs)).toBe(0);
    const report = rekey.logs.find(
      (line) => line.msg === 'every stored credential is under the new master key',
    );
    expect(report?.rekeyed).toBeGreaterThanOrEqual(1);
  });

  it('each bundle stops on SIGTERM (what `docker stop` sends) with exit code 0', async () => {
    const codes = await Promise.all(SERVICES.map((service) => services[service].stop('SIGTERM')));
    expect(codes).toEqual([0, 0, 0, 0]);
  });
});
