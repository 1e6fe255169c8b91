/**
 * The mesh under test: a 3-node JetStream cluster (testcontainers), its streams and buckets provisioned
 * with 3 replicas, and 2 gateways, 2 assemblers and 3 executors as real processes running the built
 * services (`dist/index.js`, so restarts are quick), all connected to every node. Each process sits in a
 * slot that can be killed with SIGKILL and started again with the same environment (a gateway on the
 * same port).
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { provisionMeshResources } from '@agentmesh/bus';
import {
  findFreePort,
  startNatsCluster,
  startServiceProcess,
  type NatsCluster,
  type ServiceProcess,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import type { AttemptStart, ServiceKind } from './ledger/recovery.js';

export const CHAOS_ACCOUNT = 'acme';
const READY_TIMEOUT_MS = 90_000;

const serviceEntry = (name: string): string =>
  fileURLToPath(new URL(`../../../services/${name}/dist/index.js`, import.meta.url));

export class ServiceSlot {
  #process: ServiceProcess | undefined;
  #starting: Promise<void> | undefined;
  /** The log lines of every process this slot has run, so a killed one's are kept. */
  readonly #logsOfEachRun: Array<ServiceProcess['logs']> = [];

  constructor(
    readonly name: string,
    readonly kind: ServiceKind,
    private readonly env: Record<string, string>,
  ) {}

  get up(): boolean {
    const child = this.#process?.child;
    return (
      this.#starting === undefined &&
      child !== undefined &&
      child.exitCode === null &&
      child.signalCode === null
    );
  }

  get pid(): number | undefined {
    return this.#process?.child.pid;
  }

  /** Starts the process and resolves once it logged that it is ready. */
  start(): Promise<void> {
    this.#starting ??= (async () => {
      const service = await startServiceProcess({ entry: serviceEntry(this.kind), env: this.env });
      this.#process = service;
      this.#logsOfEachRun.push(service.logs);
      try {
        await service.waitForLog((line) => line.msg === 'service ready', READY_TIMEOUT_MS);
      } catch (error) {
        // Its own last words say why (stderr is usually empty: services log JSON to stdout).
        const last = service.logs.slice(-3).map((line) => JSON.stringify(line).slice(0, 400));
        // A service still waiting for NATS would otherwise live on beside the instance started next.
        await service.stop('SIGKILL');
        throw new Error(`${this.name} did not start: ${last.join(' | ') || String(error)}`, { cause: error });
      }
    })().finally(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  /** Every log line of every run of this slot's process, oldest run first. */
  logLines(): Array<ServiceProcess['logs'][number]> {
    return this.#logsOfEachRun.flat();
  }

  /** Each task attempt this slot's executors started, from their `task attempt started` log lines. */
  attemptStarts(): AttemptStart[] {
    return this.#logsOfEachRun.flat().flatMap((line) => {
      const at = typeof line.time === 'string' ? Date.parse(line.time) : Number(line.time);
      return line.msg === 'task attempt started' &&
        typeof line.trace_id === 'string' &&
        typeof line.attempt === 'number' &&
        Number.isFinite(at)
        ? [{ slot: this.name, at, traceId: line.trace_id, attempt: line.attempt }]
        : [];
    });
  }

  /** SIGKILL; resolves when the process is gone. */
  async kill(): Promise<void> {
    await this.#process?.stop('SIGKILL');
  }

  /** Set while the process is stopped by {@link pause}: not picked for a kill or another pause. */
  paused = false;

  /**
   * SIGSTOP: the process freezes with its connections and timers as they are, and wakes with SIGCONT
   * (the function returned) believing it still holds its tasks. Undefined when nothing runs.
   */
  pause(): (() => void) | undefined {
    const pid = this.pid;
    if (pid === undefined || !this.up) return undefined;
    process.kill(pid, 'SIGSTOP');
    this.paused = true;
    return () => {
      this.paused = false;
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone meanwhile: nothing to wake.
      }
    };
  }

  async stop(): Promise<void> {
    await this.#starting?.catch(() => undefined);
    await this.#process?.stop('SIGTERM');
  }
}

export interface ChaosMesh {
  cluster: NatsCluster;
  gatewayUrls: string[];
  apiKey: string;
  adminKey: string;
  slots: ServiceSlot[];
  stop(): Promise<void>;
}

export interface ChaosMeshOptions {
  executorEnv: Record<string, string>;
}

export async function startChaosMesh(options: ChaosMeshOptions): Promise<ChaosMesh> {
  const cluster = await startNatsCluster(3, { name: 'chaos' });
  const slots: ServiceSlot[] = [];
  try {
    const nc = await connect({ servers: cluster.urls });
    await provisionMeshResources(jetstream(nc), { replicas: 3 });
    await nc.close();

    const vaultKeys = generateVaultKeyPair('k1');
    const apiKey = `am_chaos_${randomBytes(12).toString('hex')}`;
    const adminKey = `am_admin_${randomBytes(12).toString('hex')}`;
    const common = { NATS_URL: cluster.urls.join(','), NATS_REPLICAS: '3', LOG_LEVEL: 'info' };
    const credentialKeys = {
      CREDENTIALS_MASTER_KEY: randomBytes(32).toString('base64'),
      CREDENTIALS_MASTER_KEY_ID: 'm1',
    };
    const sealKeys = { VAULT_KEY_ID: vaultKeys.kid, VAULT_PUBLIC_KEY: vaultKeys.publicKey };
    const gatewayPorts = [await findFreePort(), await findFreePort()];

    gatewayPorts.forEach((port, i) =>
      slots.push(
        new ServiceSlot(`gateway-${i + 1}`, 'gateway', {
          ...common,
          ...credentialKeys,
          ...sealKeys,
          HTTP_HOST: '127.0.0.1',
          HTTP_PORT: String(port),
          API_KEYS: `${apiKey}=${CHAOS_ACCOUNT}`,
          ADMIN_API_KEYS: adminKey,
          // 20 clients of one account and key: the limits are not what this run measures.
          MAX_RUNNING_TASKS_PER_ACCOUNT: '0',
          MAX_RUNNING_TASKS_PER_API_KEY: '0',
          // A task whose message nats-server 2.9 loses in a node fault is published again well within
          // the run's settling time (checks above the executors' ack wait).
          LOST_TASK_REDRIVE_AFTER_MS: '20000',
          LOST_TASK_CHECK_MS: '5000',
        }),
      ),
    );
    for (let i = 0; i < 2; i++) {
      slots.push(
        new ServiceSlot(`assembler-${i + 1}`, 'assembler', {
          ...common,
          ...credentialKeys,
          ...sealKeys,
          MODEL_ALLOW_HOSTS: '127.0.0.1',
        }),
      );
    }
    for (let i = 0; i < 3; i++) {
      slots.push(
        new ServiceSlot(`executor-${i + 1}`, 'executor', {
          ...common,
          EXECUTOR_ID: `executor-${i + 1}`,
          VAULT_PRIVATE_KEYS: `${vaultKeys.kid}:${vaultKeys.privateKey}`,
          OUTBOUND_ALLOW_HOSTS: '127.0.0.1,localhost',
          MODEL_ALLOW_HOSTS: '127.0.0.1',
          ...options.executorEnv,
        }),
      );
    }
    await Promise.all(slots.map((slot) => slot.start()));
    return {
      cluster,
      gatewayUrls: gatewayPorts.map((port) => `http://127.0.0.1:${port}`),
      apiKey,
      adminKey,
      slots,
      async stop() {
        await Promise.allSettled(slots.map((slot) => slot.stop()));
        await cluster.stop();
      },
    };
  } catch (error) {
    await Promise.allSettled(slots.map((slot) => slot.stop()));
    await cluster.stop();
    throw error;
  }
}
