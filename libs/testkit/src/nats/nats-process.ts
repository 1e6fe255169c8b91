/**
 * nats-server as a child process of the test run, for machines without Docker. Only used when asked
 * for (`AGENTMESH_NATS_MODE=process` or the `mode` option); CI exercises the container path. The
 * JetStream store lives in a temp directory that survives restarts and is deleted on removal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  LineTail,
  NatsStartupError,
  SERVER_READY_LOG,
  type NatsRuntime,
  type NatsRuntimeSpec,
} from './nats-runtime.js';
import { NatsMode } from './nats-settings.js';
import { waitFor } from '../wait-for.js';

const GRACEFUL_STOP_MS = 10_000;

type ProcessState = 'running' | 'paused' | 'stopped' | 'removed';

export async function startNatsProcess(binary: string, spec: NatsRuntimeSpec): Promise<NatsRuntime> {
  const storeDir = await mkdtemp(join(tmpdir(), `agentmesh-nats-${spec.name}-`));
  const server = new NatsProcess(binary, spec, storeDir);
  try {
    await server.spawnUntilReady();
  } catch (error) {
    await rm(storeDir, { recursive: true, force: true });
    throw error;
  }
  return server;
}

class NatsProcess implements NatsRuntime {
  readonly mode = NatsMode.process;
  readonly #tail: LineTail;
  #child: ChildProcess | undefined;
  #exited: Promise<unknown> = Promise.resolve();
  #state: ProcessState = 'stopped';

  constructor(
    private readonly binary: string,
    private readonly spec: NatsRuntimeSpec,
    readonly storeDir: string,
  ) {
    this.#tail = new LineTail(spec.logLines);
  }

  get id(): string {
    return `pid:${this.#child?.pid ?? 'none'}`;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async spawnUntilReady(): Promise<void> {
    const config = this.spec.config;
    const args = [
      ...(config ? ['-c', join(config.dir, config.file)] : []),
      ...this.spec.args,
      ...(this.spec.jetstream && !config?.setsStoreDir ? ['--store_dir', this.storeDir] : []),
    ];
    const child = spawn(this.binary, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...config?.environment },
      // Relative paths in a configuration (certificates, includes) resolve against its directory.
      ...(config ? { cwd: config.dir } : {}),
    });
    this.#child = child;
    this.#exited = once(child, 'exit').catch(() => undefined);
    const ready = new Promise<void>((resolve, reject) => {
      // Only this run's output counts: the tail still holds the previous run's ready line.
      let carry = '';
      const onOutput = (chunk: Buffer): void => {
        const text = chunk.toString('utf8');
        this.#tail.push(text);
        const window = carry + text;
        if (window.includes(SERVER_READY_LOG)) resolve();
        carry = window.slice(-SERVER_READY_LOG.length);
      };
      child.stdout?.on('data', onOutput);
      child.stderr?.on('data', onOutput);
      child.once('error', (error) =>
        reject(
          new NatsStartupError(
            this.spec.name,
            `could not run "${this.binary}" (set AGENTMESH_NATS_SERVER_BIN to the nats-server binary): ${error.message}`,
            this.#tail.lines(),
            { cause: error },
          ),
        ),
      );
      child.once('exit', (code, signal) =>
        reject(
          new NatsStartupError(
            this.spec.name,
            `process exited (${signal ?? `code ${code}`})`,
            this.#tail.lines(),
          ),
        ),
      );
    });
    const timer = new AbortController();
    const timeout = sleep(this.spec.startupTimeoutMs, undefined, { signal: timer.signal }).then(() => {
      throw new NatsStartupError(
        this.spec.name,
        `not ready after ${this.spec.startupTimeoutMs} ms`,
        this.#tail.lines(),
      );
    });
    try {
      await Promise.race([ready, timeout]);
      this.#state = 'running';
    } catch (error) {
      child.kill('SIGKILL');
      await this.#exited;
      this.#state = 'stopped';
      throw error;
    } finally {
      timer.abort();
      timeout.catch(() => undefined);
    }
  }

  async shutdown(): Promise<void> {
    this.#assertNotRemoved('shut down');
    if (this.#state === 'stopped') return;
    if (this.#state === 'paused') await this.unpause();
    this.#child?.kill('SIGTERM');
    const exitedInTime = await Promise.race([this.#exited.then(() => true), sleep(GRACEFUL_STOP_MS, false)]);
    if (!exitedInTime) await this.kill();
    this.#state = 'stopped';
  }

  async kill(): Promise<void> {
    this.#assertNotRemoved('kill');
    if (this.#state === 'stopped') return;
    this.#child?.kill('SIGKILL');
    await this.#exited;
    this.#state = 'stopped';
  }

  async pause(): Promise<void> {
    if (this.#state !== 'running')
      throw new Error(`cannot pause NATS server ${this.spec.name}: it is ${this.#state}`);
    this.#child?.kill('SIGSTOP');
    this.#state = 'paused';
    // A stop signal is delivered when the threads are next scheduled; until every thread shows it, the
    // server may still answer (a busy machine showed it: a probe connected after pause() returned).
    const pid = this.#child?.pid;
    if (pid !== undefined) {
      await waitFor(() => allThreadsStopped(pid), {
        description: `NATS server ${this.spec.name} to stop`,
        timeoutMs: 5_000,
      });
    }
  }

  async unpause(): Promise<void> {
    if (this.#state !== 'paused') return;
    this.#child?.kill('SIGCONT');
    this.#state = 'running';
  }

  async restart(): Promise<void> {
    this.#assertNotRemoved('restart');
    await this.shutdown();
    await this.spawnUntilReady();
  }

  async remove(): Promise<void> {
    if (this.#state === 'removed') return;
    if (this.#state === 'paused') this.#child?.kill('SIGCONT');
    if (this.#state !== 'stopped') {
      this.#child?.kill('SIGKILL');
      await this.#exited;
    }
    this.#state = 'removed';
    await rm(this.storeDir, { recursive: true, force: true });
  }

  logTail(): string[] {
    return this.#tail.lines();
  }

  #assertNotRemoved(action: string): void {
    if (this.#state === 'removed')
      throw new Error(`cannot ${action} NATS server ${this.spec.name}: it was removed`);
  }
}

/** Whether every thread of `pid` is stopped (state `T`, or `t` when traced), from /proc. */
function allThreadsStopped(pid: number): boolean {
  const threads = readdirSync(`/proc/${pid}/task`);
  return threads.every((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The state follows the command name, which is in parentheses and may itself hold spaces.
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state === 'T' || state === 't';
  });
}
