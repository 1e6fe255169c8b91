/**
 * Runs a service's real entry point as a child process (TypeScript through tsx; a JavaScript file, such
 * as a production bundle, with plain `node`), reads its JSON log lines, and stops it with a signal — so
 * tests see start-up and shutdown exactly as production does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

export interface ServiceProcessOptions {
  /**
   * Absolute path of the service's entry module: `.ts` runs through tsx (e.g. `services/gateway/src/index.ts`),
   * anything else with plain `node` (e.g. `services/gateway/bundle/dist/index.mjs`).
   */
  entry: string;
  /** Environment of the child on top of PATH and HOME (nothing else of the parent leaks in). */
  env?: Record<string, string>;
  /** How long to wait for the readiness log line. */
  readyTimeoutMs?: number;
}

export type LogLine = Record<string, unknown> & { msg?: string; level?: string };

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Every JSON line the service logged so far (non-JSON output is kept as `{ msg: raw }`). */
  readonly logs: LogLine[];
  /** Everything written to stderr. */
  stderr(): string;
  /** Resolves with the first log line matching `predicate`, rejects after `timeoutMs`. */
  waitForLog(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the exit code once the process has exited (by itself or by {@link stop}). */
  readonly exited: Promise<number | null>;
  /** Sends `signal` and resolves with the exit code. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

export async function startServiceProcess(options: ServiceProcessOptions): Promise<ServiceProcess> {
  const loader = options.entry.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const child = spawn(process.execPath, [...loader, options.entry], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: LogLine[] = [];
  const waiters = new Set<{ predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  createInterface({ input: child.stdout! }).on('line', (raw) => {
    let line: LogLine;
    try {
      line = JSON.parse(raw) as LogLine;
    } catch {
      line = { msg: raw };
    }
    logs.push(line);
    for (const waiter of waiters) {
      if (waiter.predicate(line)) {
        waiters.delete(waiter);
        waiter.resolve(line);
      }
    }
  });
  // 'close' (not 'exit') waits for stdout to be read to its end, so the last log lines are in `logs`.
  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;

  const waitForLog = (predicate: (line: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> => {
    const seen = logs.find(predicate);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const waiter = { predicate, resolve };
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no matching log line within ${timeoutMs} ms; stderr:\n${stderr}`));
      }, timeoutMs);
      waiter.resolve = (line) => {
        clearTimeout(timer);
        resolve(line);
      };
      waiters.add(waiter);
      void exited.then(([code]) => {
        if (!waiters.has(waiter)) return;
        waiters.delete(waiter);
        clearTimeout(timer);
        reject(new Error(`service exited (code ${code}) before the log line; stderr:\n${stderr}`));
      });
    });
  };

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> => {
    if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const [code] = await exited;
    clearTimeout(timer);
    return code;
  };

  return { child, logs, stderr: () => stderr, waitForLog, exited: exited.then(([code]) => code), stop };
}
