/**
 * The whole mesh on infra/nats/accounts.conf: a real nats-server loading that file with a fresh password
 * per user, the provisioning run as the `provisioner` user, and the gateway, assembler, executor and
 * recall as processes, each logged in as its own NATS user through NATS_USER/NATS_PASSWORD. The
 * gateway starts before the provisioning, so it has to wait for the streams and buckets it may not
 * create. Test code connects as any user of the file to show what that user can and cannot do.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import {
  connectAsInfraUser,
  findFreePort,
  generateInfraPasswords,
  INFRA_EXAMPLE_ACCOUNT,
  INFRA_NATS_DIR,
  INFRA_NATS_USERS,
  infraInboxPrefix,
  infraPasswordEnvironment,
  startNats,
  startServiceProcess,
  type LogLine,
  type NatsServer,
  type InfraClient,
  type InfraNatsUser,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { PermissionViolationError } from '@nats-io/transport-node';

const entry = (path: string): string => fileURLToPath(new URL(`../../../services/${path}`, import.meta.url));

/** Every user of accounts.conf. */
export const USERS = INFRA_NATS_USERS;
export type MeshUser = InfraNatsUser;
export const ACCOUNT = INFRA_EXAMPLE_ACCOUNT;

export type Client = InfraClient;

export interface SecureMesh {
  nats: NatsServer;
  passwords: Record<MeshUser, string>;
  gatewayUrl: string;
  /** API key of account `acme`. */
  apiKey: string;
  adminKey: string;
  services: Record<ServiceName, ServiceProcess>;
  provisioning: ServiceProcess;
  /** Log lines the gateway wrote before the provisioning ran. */
  gatewayLogsBeforeProvisioning: LogLine[];
  /** Connects as `user` with its password and inbox prefix (or another prefix, to show it refused). */
  connectAs(user: MeshUser, options?: { inboxPrefix?: string }): Promise<Client>;
  stop(): Promise<void>;
}

type ServiceName = 'gateway' | 'assembler' | 'executor' | 'recall';

export interface SecureMeshOptions {
  /** Environment of the recall service (its upstream URLs). */
  recall: Record<string, string>;
  /** More environment per service (METRICS_PORT, shorter intervals, …). */
  env?: Partial<Record<ServiceName, Record<string, string>>>;
  /** Keep nats-server's whole log for {@link NatsServer.log} (to read its permission violations). */
  keepNatsLog?: boolean;
  /**
   * Provision before any service starts, as a deployment does (default: the gateway starts first and
   * waits, which costs one refused create per stream).
   */
  provisionFirst?: boolean;
}

export async function startSecureMesh(options: SecureMeshOptions): Promise<SecureMesh> {
  // Two of them are passwords nats-server would misread unquoted (a leading '-', all digits).
  const passwords = generateInfraPasswords();

  const nats = await startNats({
    name: 'secure-mesh',
    keepLog: options.keepNatsLog ?? false,
    config: {
      dir: INFRA_NATS_DIR,
      file: 'accounts.conf',
      environment: infraPasswordEnvironment(passwords),
    },
    client: {
      user: 'provisioner',
      pass: passwords.provisioner,
      inboxPrefix: infraInboxPrefix('provisioner'),
    },
  });

  const vaultKeys = generateVaultKeyPair('k1');
  const masterKey = randomBytes(32).toString('base64');
  const apiKey = `am_test_${randomBytes(12).toString('hex')}`;
  const adminKey = `am_admin_${randomBytes(12).toString('hex')}`;
  const port = await findFreePort();
  const login = (user: MeshUser) => ({
    NATS_URL: nats.url,
    NATS_USER: user,
    NATS_PASSWORD: passwords[user],
    LOG_LEVEL: 'info',
  });
  const credentialKeys = { CREDENTIALS_MASTER_KEY: masterKey, CREDENTIALS_MASTER_KEY_ID: 'm1' };
  const sealKeys = { VAULT_KEY_ID: vaultKeys.kid, VAULT_PUBLIC_KEY: vaultKeys.publicKey };
  const started: ServiceProcess[] = [];
  const start = async (path: string, env: Record<string, string>): Promise<ServiceProcess> => {
    const service = await startServiceProcess({ entry: entry(path), env });
    started.push(service);
    return service;
  };

  const provision = async (): Promise<ServiceProcess> => {
    const provisioning = await start('gateway/src/provision.ts', login('provisioner'));
    if ((await provisioning.exited) !== 0) {
      throw new Error(`provisioning failed:\n${JSON.stringify(provisioning.logs)}\n${provisioning.stderr()}`);
    }
    return provisioning;
  };

  try {
    const provisionedFirst = options.provisionFirst ? await provision() : undefined;
    const gateway = await start('gateway/src/index.ts', {
      ...login('gateway'),
      ...credentialKeys,
      ...sealKeys,
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(port),
      API_KEYS: `${apiKey}=${ACCOUNT}`,
      ADMIN_API_KEYS: adminKey,
      ...options.env?.gateway,
    });
    if (!provisionedFirst) {
      await gateway.waitForLog((line) => String(line.msg).startsWith('waiting for '), 60_000);
    }
    const gatewayLogsBeforeProvisioning = [...gateway.logs];
    const provisioning = provisionedFirst ?? (await provision());

    const [assembler, executor, recall] = await Promise.all([
      start('assembler/src/index.ts', {
        ...login('assembler'),
        ...credentialKeys,
        ...sealKeys,
        MODEL_ALLOW_HOSTS: '127.0.0.1',
        ...options.env?.assembler,
      }),
      start('executor/src/index.ts', {
        ...login('executor'),
        VAULT_PRIVATE_KEYS: `${vaultKeys.kid}:${vaultKeys.privateKey}`,
        OUTBOUND_ALLOW_HOSTS: '127.0.0.1,localhost',
        MODEL_ALLOW_HOSTS: '127.0.0.1',
        ...options.env?.executor,
      }),
      start('recall/src/index.ts', { ...login('recall'), ...options.recall, ...options.env?.recall }),
    ]);
    const services = { gateway, assembler, executor, recall };
    await Promise.all(
      Object.values(services).map((service) =>
        service.waitForLog((line) => line.msg === 'service ready', 60_000),
      ),
    );

    const clients: Client[] = [];
    return {
      nats,
      passwords,
      gatewayUrl: `http://127.0.0.1:${port}`,
      apiKey,
      adminKey,
      services,
      provisioning,
      gatewayLogsBeforeProvisioning,
      async connectAs(user, connectOptions = {}) {
        const client = await connectAsInfraUser(nats.url, user, passwords[user], connectOptions);
        clients.push(client);
        return client;
      },
      async stop() {
        await Promise.allSettled(clients.map(({ nc }) => nc.close()));
        await Promise.allSettled(started.map((service) => service.stop('SIGTERM')));
        await nats.stop();
      },
    };
  } catch (error) {
    await Promise.allSettled(started.map((service) => service.stop('SIGKILL')));
    await nats.stop();
    throw error;
  }
}

/** The server's permission violation behind a refused request or subscription (nats.js may wrap it). */
export function permissionViolation(error: unknown): PermissionViolationError | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth += 1) {
    if (current instanceof PermissionViolationError) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** Resolves with what `attempt` rejected with; fails when it succeeds. */
export async function refusal(attempt: Promise<unknown>): Promise<unknown> {
  try {
    await attempt;
  } catch (error) {
    return error;
  }
  throw new Error('the operation succeeded; a permission violation was expected');
}
