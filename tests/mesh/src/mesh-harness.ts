/**
 * Starts the whole mesh for end-to-end tests and benchmarks: NATS (testcontainers), the gateway, the
 * assembler and N executors as real processes, each with freshly generated keys, plus a scripted model
 * and a recording HTTP API. Everything listens on 127.0.0.1.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  findFreePort,
  startNats,
  startServiceProcess,
  type LogLine,
  type NatsServer,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';

const serviceEntry = (name: string): string =>
  fileURLToPath(new URL(`../../../services/${name}/src/index.ts`, import.meta.url));

export interface MeshOptions {
  executors?: number;
  /** Gateways (default 1), each on its own port; the first is `gateway`/`gatewayUrl`. */
  gateways?: number;
  /** Extra environment per service (e.g. a shorter ack wait for crash tests). */
  env?: {
    gateway?: Record<string, string>;
    assembler?: Record<string, string>;
    executor?: Record<string, string>;
  };
  /** Starts the recall service too, with this environment (its upstream URLs). */
  recall?: Record<string, string>;
  /** Environment given to every service (e.g. OTEL_* to export spans). */
  common?: Record<string, string>;
}

export interface Mesh {
  nats: NatsServer;
  gatewayUrl: string;
  /** Every gateway's URL, the first one's first. */
  gatewayUrls: string[];
  /** An API key of account `acme` (user-facing calls). */
  apiKey: string;
  /** An admin key for the management plane. */
  adminKey: string;
  gateway: ServiceProcess;
  gateways: ServiceProcess[];
  assembler: ServiceProcess;
  executors: ServiceProcess[];
  recall?: ServiceProcess;
  /** Every log line of every service so far. */
  logs(): LogLine[];
  /** Starts one more executor (same keys), with `env` over the executors' environment. */
  addExecutor(env?: Record<string, string>): Promise<ServiceProcess>;
  stop(): Promise<void>;
}

export const MESH_ACCOUNT = 'acme';

export async function startMesh(options: MeshOptions = {}): Promise<Mesh> {
  const nats = await startNats();
  const vaultKeys = generateVaultKeyPair('k1');
  const masterKey = randomBytes(32).toString('base64');
  const apiKey = `am_test_${randomBytes(12).toString('hex')}`;
  const adminKey = `am_admin_${randomBytes(12).toString('hex')}`;
  const ports: number[] = [];
  for (let i = 0; i < (options.gateways ?? 1); i++) ports.push(await findFreePort());
  const port = ports[0]!;
  const common = { NATS_URL: nats.url, LOG_LEVEL: 'info', ...options.common };
  const credentialKeys = { CREDENTIALS_MASTER_KEY: masterKey, CREDENTIALS_MASTER_KEY_ID: 'm1' };
  const sealKeys = { VAULT_KEY_ID: vaultKeys.kid, VAULT_PUBLIC_KEY: vaultKeys.publicKey };

  const executorEnv = {
    ...common,
    VAULT_PRIVATE_KEYS: `${vaultKeys.kid}:${vaultKeys.privateKey}`,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1,localhost',
    // The scripted model runs on loopback too; the model endpoint has its own allow-list.
    MODEL_ALLOW_HOSTS: '127.0.0.1',
    ...options.env?.executor,
    // As the executor image starts it (infra/docker/Dockerfile): a bounded young generation.
    NODE_OPTIONS: ['--max-semi-space-size=8', options.env?.executor?.['NODE_OPTIONS']]
      .filter(Boolean)
      .join(' '),
  };
  const startExecutor = (env: Record<string, string> = {}): Promise<ServiceProcess> =>
    startServiceProcess({ entry: serviceEntry('executor'), env: { ...executorEnv, ...env } });

  const startGateway = (gatewayPort: number): Promise<ServiceProcess> =>
    startServiceProcess({
      entry: serviceEntry('gateway'),
      env: {
        ...common,
        ...credentialKeys,
        ...sealKeys,
        HTTP_HOST: '127.0.0.1',
        HTTP_PORT: String(gatewayPort),
        API_KEYS: `${apiKey}=${MESH_ACCOUNT}`,
        ADMIN_API_KEYS: adminKey,
        TRUST_ACCOUNT_HEADERS: 'true',
        ...options.env?.gateway,
      },
    });
  const [gateway, assembler, ...executors] = await Promise.all([
    startGateway(port),
    startServiceProcess({
      entry: serviceEntry('assembler'),
      env: {
        ...common,
        ...credentialKeys,
        ...sealKeys,
        // The thread summariser calls the scripted model on loopback.
        MODEL_ALLOW_HOSTS: '127.0.0.1',
        ...options.env?.assembler,
      },
    }),
    ...Array.from({ length: options.executors ?? 1 }, () => startExecutor()),
  ]);
  const recall = options.recall
    ? await startServiceProcess({ entry: serviceEntry('recall'), env: { ...common, ...options.recall } })
    : undefined;
  const moreGateways = await Promise.all(ports.slice(1).map((gatewayPort) => startGateway(gatewayPort)));
  const all = [gateway!, ...moreGateways, assembler!, ...executors, ...(recall ? [recall] : [])];
  await Promise.all(all.map((service) => service.waitForLog((line) => line.msg === 'service ready', 60_000)));

  return {
    nats,
    gatewayUrl: `http://127.0.0.1:${port}`,
    gatewayUrls: ports.map((gatewayPort) => `http://127.0.0.1:${gatewayPort}`),
    apiKey,
    adminKey,
    gateway: gateway!,
    gateways: [gateway!, ...moreGateways],
    assembler: assembler!,
    executors,
    ...(recall ? { recall } : {}),
    logs: () => all.flatMap((service) => service.logs),
    async addExecutor(env) {
      const executor = await startExecutor(env);
      await executor.waitForLog((line) => line.msg === 'service ready', 60_000);
      all.push(executor);
      executors.push(executor);
      return executor;
    },
    async stop() {
      await Promise.all(all.map((service) => service.stop('SIGTERM')));
      await nats.stop();
    },
  };
}
