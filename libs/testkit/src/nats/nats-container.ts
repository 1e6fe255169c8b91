/**
 * nats-server in a container started through testcontainers. The container shares the host network
 * (the machines' Docker runs without a bridge) and the server binds 127.0.0.1 on ports chosen by the
 * caller. Faults the container cannot express through testcontainers (SIGKILL, pause) go through
 * dockerode on the container id, using testcontainers' own Docker connection.
 */
import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Container } from 'dockerode';
import { GenericContainer, getContainerRuntimeClient, Wait, type StartedTestContainer } from 'testcontainers';
import {
  LineTail,
  NatsStartupError,
  SERVER_READY_LOG,
  type NatsRuntime,
  type NatsRuntimeSpec,
} from './nats-runtime.js';
import { NatsMode } from './nats-settings.js';

/** Label on every container the test kit starts, so a stray one can be found (`docker ps -f label=…`). */
export const TESTKIT_LABEL = 'agentmesh.testkit';

const STORE_DIR = '/data/nats';
/** Where a server configuration directory is copied to. */
const CONFIG_DIR = '/etc/agentmesh/nats-config';
const GRACEFUL_STOP_SECONDS = 10;
/** How long to wait for the log stream of a container that died during start-up to drain. */
const LOG_DRAIN_MS = 2_000;

type ContainerState = 'running' | 'paused' | 'stopped' | 'removed';

/** What a container needs beyond the server's arguments, e.g. a config file and the secrets it reads. */
export interface NatsContainerExtras {
  /** Files copied into the container before it starts. */
  files?: readonly { source: string; target: string }[];
  /** Environment of the server process (a config file's `$VARIABLE`s). */
  environment?: Readonly<Record<string, string>>;
}

export async function startNatsContainer(
  image: string,
  spec: NatsRuntimeSpec,
  extras: NatsContainerExtras = {},
): Promise<NatsRuntime> {
  const tail = new LineTail(spec.logLines);
  let logEnded: Promise<unknown> = Promise.resolve();
  const configArgs = spec.config ? ['-c', `${CONFIG_DIR}/${spec.config.file}`] : [];
  const definition = new GenericContainer(image)
    .withNetworkMode('host')
    .withCopyDirectoriesToContainer(spec.config ? [{ source: spec.config.dir, target: CONFIG_DIR }] : [])
    .withCopyFilesToContainer([...(extras.files ?? [])])
    .withEnvironment({ ...spec.config?.environment, ...extras.environment })
    .withCommand([
      ...configArgs,
      ...spec.args,
      ...(spec.jetstream && !spec.config?.setsStoreDir ? ['--store_dir', STORE_DIR] : []),
    ])
    .withLabels({ [TESTKIT_LABEL]: 'nats', [`${TESTKIT_LABEL}.server`]: spec.name })
    .withWaitStrategy(Wait.forLogMessage(SERVER_READY_LOG))
    .withStartupTimeout(spec.startupTimeoutMs)
    .withLogConsumer((stream) => {
      logEnded = followLog(stream, tail);
    });
  // Relative paths in a configuration (certificates, includes) resolve against its directory.
  if (spec.config) definition.withWorkingDir(CONFIG_DIR);

  let started: StartedTestContainer;
  try {
    started = await definition.start();
  } catch (error) {
    // The container is gone already (testcontainers removes it); let its last log lines arrive.
    await Promise.race([logEnded, sleep(LOG_DRAIN_MS)]);
    throw new NatsStartupError(
      spec.name,
      `container from image ${image}: ${messageOf(error)}`,
      tail.lines(),
      {
        cause: error,
      },
    );
  }
  return new NatsContainer(started, spec, tail);
}

class NatsContainer implements NatsRuntime {
  readonly mode = NatsMode.container;
  readonly storeDir = STORE_DIR;
  #state: ContainerState = 'running';

  constructor(
    private readonly started: StartedTestContainer,
    private readonly spec: NatsRuntimeSpec,
    private readonly tail: LineTail,
  ) {}

  get id(): string {
    return this.started.getId();
  }

  async shutdown(): Promise<void> {
    this.#assertNotRemoved('shut down');
    if (this.#state === 'stopped') return;
    if (this.#state === 'paused') await this.unpause();
    const container = await this.#docker();
    await container.stop({ t: GRACEFUL_STOP_SECONDS }).catch(ignoreNotModified);
    this.#state = 'stopped';
  }

  async kill(): Promise<void> {
    this.#assertNotRemoved('kill');
    if (this.#state === 'stopped') return;
    const container = await this.#docker();
    await container.kill({ signal: 'SIGKILL' });
    await container.wait({ condition: 'not-running' });
    this.#state = 'stopped';
  }

  async pause(): Promise<void> {
    if (this.#state !== 'running')
      throw new Error(`cannot pause NATS server ${this.spec.name}: it is ${this.#state}`);
    await (await this.#docker()).pause();
    this.#state = 'paused';
  }

  async unpause(): Promise<void> {
    if (this.#state !== 'paused') return;
    await (await this.#docker()).unpause();
    this.#state = 'running';
  }

  async restart(): Promise<void> {
    this.#assertNotRemoved('restart');
    if (this.#state === 'paused') await this.unpause();
    const restartedAt = Math.floor(Date.now() / 1000);
    try {
      // Docker's own stop/start: testcontainers' restart also waits for a log line, and that wait was
      // seen to hang under load. Readiness is checked by the caller with a real connection instead.
      const container = await this.#docker();
      if (this.#state === 'running')
        await container.stop({ t: GRACEFUL_STOP_SECONDS }).catch(ignoreNotModified);
      await container.start();
    } catch (error) {
      this.#state = 'removed';
      throw new NatsStartupError(this.spec.name, `restart failed: ${messageOf(error)}`, this.tail.lines(), {
        cause: error,
      });
    }
    this.#state = 'running';
    void followLog(await this.started.logs({ since: restartedAt }), this.tail);
  }

  async remove(): Promise<void> {
    if (this.#state === 'removed') return;
    if (this.#state === 'paused') await this.unpause().catch(() => undefined);
    this.#state = 'removed';
    await this.started.stop({ timeout: GRACEFUL_STOP_SECONDS * 1000, remove: true });
  }

  logTail(): string[] {
    return this.tail.lines();
  }

  async #docker(): Promise<Container> {
    const client = await getContainerRuntimeClient();
    return client.container.getById(this.started.getId());
  }

  #assertNotRemoved(action: string): void {
    if (this.#state === 'removed')
      throw new Error(`cannot ${action} NATS server ${this.spec.name}: it was removed`);
  }
}

async function followLog(stream: Readable, tail: LineTail): Promise<void> {
  stream.on('data', (chunk: Buffer | string) => tail.push(String(chunk)));
  stream.on('error', () => undefined);
  await finished(stream).catch(() => undefined);
}

/** Docker answers 304 when a container is already in the requested state. */
function ignoreNotModified(error: unknown): void {
  if ((error as { statusCode?: number }).statusCode !== 304) throw error;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
