/**
 * What runs one nats-server: a container (testcontainers) or a local process. Both expose the same
 * lifecycle so fault tests read the same in either mode. Readiness here means the server logged
 * "Server is ready"; JetStream readiness is checked on top by the callers.
 */
import type { NatsMode } from './nats-settings.js';

export const SERVER_READY_LOG = 'Server is ready';

export interface NatsRuntimeSpec {
  /** Server name, also used in diagnostics. */
  name: string;
  /** nats-server arguments without `--store_dir`. */
  args: readonly string[];
  /** Whether a store directory is needed (JetStream on). */
  jetstream: boolean;
  startupTimeoutMs: number;
  /** A configuration file the server loads (`-c`), with the environment its `$VARIABLES` come from. */
  config?: NatsServerConfig;
  /** How many of the server's last log lines are kept (default 40); `Infinity` keeps them all. */
  logLines?: number;
}

/**
 * A server configuration: a directory of config files (a container gets a copy, a process reads it in
 * place), the file in it to load, and the server's environment, where nats-server looks up every
 * `$VARIABLE` the files do not define (passwords, say). The test kit's flags (address, ports, name,
 * JetStream store) win over the file's.
 */
export interface NatsServerConfig {
  dir: string;
  /** Relative to `dir`; includes in it are resolved relative to it, as nats-server does. */
  file: string;
  environment?: Readonly<Record<string, string>>;
  /**
   * The file sets `jetstream { store_dir }` itself (relative paths resolve against `dir`), so the test
   * kit passes no `--store_dir`: nats-server refuses the setting twice.
   */
  setsStoreDir?: boolean;
}

export interface NatsRuntime {
  readonly mode: NatsMode;
  /** Container id in container mode, `pid:<pid>` in process mode. */
  readonly id: string;
  /** Process id in process mode. */
  readonly pid?: number | undefined;
  /** JetStream store directory: inside the container, or a temp dir on this machine. */
  readonly storeDir: string;
  /** Graceful shutdown (SIGTERM) that keeps the store, so {@link restart} can bring the server back. */
  shutdown(): Promise<void>;
  /** SIGKILL: the server dies without any cleanup; the store stays. */
  kill(): Promise<void>;
  /** Freezes the server (docker pause / SIGSTOP): sockets stay open but nothing answers. */
  pause(): Promise<void>;
  unpause(): Promise<void>;
  /** Brings the server back (from running, paused, shut down or killed) with the same args and store. */
  restart(): Promise<void>;
  /** Final teardown: stops the server and removes the container or temp store. Idempotent. */
  remove(): Promise<void>;
  /** Last lines the server logged (as many as the spec's `logLines`), for error messages. */
  logTail(): string[];
}

/** The server did not come up. `portConflict` says a retry with fresh ports may succeed. */
export class NatsStartupError extends Error {
  override readonly name = 'NatsStartupError';
  readonly code = 'SERVICE_UNAVAILABLE';
  readonly retryable: boolean;
  readonly portConflict: boolean;

  constructor(serverName: string, reason: string, logTail: readonly string[], options?: ErrorOptions) {
    const conflict = logTail.some((line) => /address already in use/i.test(line));
    const log = logTail.length > 0 ? `\n--- last server log lines ---\n${logTail.join('\n')}` : '';
    super(`NATS server ${serverName} did not start: ${reason}${log}`, options);
    this.portConflict = conflict;
    this.retryable = conflict;
  }
}

/** Keeps the last `limit` lines of a server's output. */
export class LineTail {
  readonly #lines: string[] = [];
  #partial = '';

  constructor(private readonly limit = 40) {}

  push(chunk: string): void {
    const text = this.#partial + chunk;
    const parts = text.split('\n');
    this.#partial = parts.pop() ?? '';
    for (const line of parts) this.#add(line);
  }

  lines(): string[] {
    return this.#partial ? [...this.#lines, this.#partial] : [...this.#lines];
  }

  #add(line: string): void {
    const trimmed = line.replace(/\r$/, '');
    if (!trimmed) return;
    this.#lines.push(trimmed);
    if (this.#lines.length > this.limit) this.#lines.shift();
  }
}
