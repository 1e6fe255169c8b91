// An executor running in the test's own process on a real NATS server, as the executor's integration tests
// start it: its own connection, the vault key of the tasks the test seals, tools and the model allowed on
// loopback (where the test kit's servers listen), and its log lines kept when the test wants to read them.
import { createLogger, type RunningService } from '@agentmesh/runtime';
import type { VaultKeyPair } from '@agentmesh/vault';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { executorConfigSchema } from '../config.js';
import { startExecutor } from '../executor-service.js';

export interface InProcessExecutorOptions {
  natsUrl: string;
  vaultKeys: VaultKeyPair;
  /** Further variables of the executor's config (they win over the defaults here). */
  env?: Record<string, string>;
  /** Where log lines go (at debug level); without it the executor logs nothing. */
  logLines?: string[];
}

/** Starts the executor; `stop` stops it and drains its connection. */
export async function startInProcessExecutor(options: InProcessExecutorOptions): Promise<RunningService> {
  const config = executorConfigSchema.parse({
    NATS_URL: options.natsUrl,
    VAULT_PRIVATE_KEYS: `${options.vaultKeys.kid}:${options.vaultKeys.privateKey}`,
    OUTBOUND_ALLOW_HOSTS: '127.0.0.1',
    MODEL_ALLOW_HOSTS: '127.0.0.1',
    PULL_EXPIRES_MS: '1000',
    SHUTDOWN_TIMEOUT_MS: '5000',
    ...options.env,
  });
  const lines = options.logLines;
  const log = createLogger({
    service: 'executor',
    level: lines === undefined ? 'silent' : 'debug',
    destination: { write: (line) => void lines?.push(line) },
  });
  const nc = await connect({ servers: options.natsUrl });
  const running = await startExecutor({ config, log, nc });
  return {
    async stop() {
      await running.stop();
      await nc.drain();
    },
  };
}

/** Every message on every subject from now on, headers and body as text: what canary checks read. */
export function recordWire(nc: NatsConnection): { subject: string; text: string }[] {
  const wire: { subject: string; text: string }[] = [];
  nc.subscribe('>', {
    callback: (_error, msg) => {
      const headers = msg.headers
        ? [...msg.headers.keys()].map((key) => `${key}: ${msg.headers!.values(key).join(',')}`)
        : [];
      wire.push({
        subject: msg.subject,
        text: `${headers.join('\n')}\n${new TextDecoder().decode(msg.data)}`,
      });
    },
  });
  return wire;
}
