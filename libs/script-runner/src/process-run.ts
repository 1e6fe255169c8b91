/**
 * Runs one child process in its own process group and collects what it wrote, within bounds: stdout is
 * read only up to its limit (then the group is killed), stderr keeps its first bytes, the time limit kills
 * the whole group. After the child ends, the group is killed and we wait until no member is left, so a
 * run never leaves processes behind (a member that moved to a new session is the sandbox's pid
 * namespace's job).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';
import { isErrno } from './path-jail.js';

export interface ProcessRequest {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Identity to start the process with (groups cleared, then gid and uid set, before exec). */
  readonly uid?: number;
  readonly gid?: number;
  readonly stdin: Buffer;
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  readonly maxStderrBytes: number;
  /** Written to fd 3 (then closed); when given, fd 4 is read as the status channel. */
  readonly control?: Buffer;
  /**
   * The process is a supervisor (unshare) that waits for its child: stop it by killing that child, so
   * the supervisor reaps it and exits. Killing both at once would orphan the child, and an orphan
   * lingers as a zombie until the host's init gets round to reaping it.
   */
  readonly stopThroughChildren?: boolean;
  readonly onSpawn?: (pid: number) => void;
}

export interface ProcessOutcome {
  readonly stdout: Buffer;
  /** stdout went past the limit; `stdout` holds exactly the first `maxStdoutBytes`. */
  readonly stdoutOverflow: boolean;
  readonly stderr: string;
  /** Bytes of stderr dropped past the limit. */
  readonly stderrDropped: number;
  /** What the child wrote on fd 4 (bounded), when a control channel was used. */
  readonly status: string;
  readonly exitCode: number | null;
  readonly signal: string | null;
  readonly timedOut: boolean;
  /** The process could not be started at all (e.g. ENOENT). */
  readonly spawnError?: Error;
}

const MAX_STATUS_BYTES = 64 * 1024;
/** How long stragglers may take to disappear after SIGKILL before we give up waiting. */
const GROUP_EXIT_WAIT_MS = 5_000;
const GROUP_POLL_MS = 20;
/** How long a supervisor gets to exit after its child was killed before the whole group is. */
const SUPERVISOR_EXIT_GRACE_MS = 2_000;

export function runProcess(request: ProcessRequest): Promise<ProcessOutcome> {
  return new Promise((resolve) => {
    const withControl = request.control !== undefined;
    const child = spawn(request.command, [...request.args], {
      cwd: request.cwd,
      env: request.env,
      ...(request.uid === undefined ? {} : { uid: request.uid }),
      ...(request.gid === undefined ? {} : { gid: request.gid }),
      detached: true,
      stdio: withControl ? ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
    });
    const stdout = new BoundedBuffer(request.maxStdoutBytes);
    const stderr = new BoundedBuffer(request.maxStderrBytes);
    const status = new BoundedBuffer(MAX_STATUS_BYTES);
    let stdoutOverflow = false;
    let timedOut = false;
    let spawnError: Error | undefined;

    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch (error) {
        if (!isErrno(error, 'ESRCH')) throw error;
      }
    };

    let graceTimer: NodeJS.Timeout | undefined;
    const stop = () => {
      const pid = child.pid;
      if (request.stopThroughChildren === true && pid !== undefined) {
        const children = childrenOf(pid);
        for (const childPid of children) killProcess(childPid);
        if (children.length > 0) {
          graceTimer ??= setTimeout(killGroup, SUPERVISOR_EXIT_GRACE_MS);
          return;
        }
      }
      killGroup();
    };

    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, request.timeoutMs);

    child.on('spawn', () => {
      if (child.pid !== undefined) request.onSpawn?.(child.pid);
    });
    child.on('error', (error) => {
      spawnError = error;
      // Not started at all: no 'close' follows.
      if (child.pid === undefined) finish();
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      if (stdoutOverflow) return;
      if (!stdout.add(chunk)) {
        // Stop reading at the limit: nothing past it is buffered, and the writer is killed.
        stdoutOverflow = true;
        child.stdout?.destroy();
        stop();
      }
    });
    child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
    if (withControl) {
      const statusStream = child.stdio[4] as Readable;
      statusStream.on('data', (chunk: Buffer) => status.add(chunk));
      statusStream.on('error', () => undefined);
      const controlStream = child.stdio[3] as Writable;
      controlStream.on('error', () => undefined);
      controlStream.end(request.control);
    }
    // The script may exit (or never read) before taking all of its input.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(request.stdin);

    let exit: { code: number | null; signal: string | null } = { code: null, signal: null };
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      clearTimeout(graceTimer);
      // Anything the child left running dies with it; its pipes then close.
      killGroup();
    });
    let finished = false;
    function finish() {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      void waitForGroupExit(child.pid).then(() =>
        resolve({
          stdout: stdout.bytes(),
          stdoutOverflow,
          stderr: stderr.bytes().toString('utf8'),
          stderrDropped: stderr.dropped,
          status: status.bytes().toString('utf8'),
          exitCode: exit.code,
          signal: exit.signal,
          timedOut,
          ...(spawnError === undefined ? {} : { spawnError }),
        }),
      );
    }
    child.on('close', finish);
  });
}

export function childrenOf(pid: number): number[] {
  try {
    const text = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
    return text
      .split(' ')
      .filter((entry) => entry.trim() !== '')
      .map(Number);
  } catch {
    return [];
  }
}

export function killProcess(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch (error) {
    if (!isErrno(error, 'ESRCH')) throw error;
  }
}

/** Resolves once no process of the group exists (or after a bound, when one is stuck in the kernel). */
export async function waitForGroupExit(pgid: number | undefined): Promise<void> {
  if (pgid === undefined) return;
  const deadline = Date.now() + GROUP_EXIT_WAIT_MS;
  while (Date.now() < deadline) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch (error) {
      if (isErrno(error, 'ESRCH')) return;
      throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
  }
}

/** Keeps the first `limit` bytes; counts what it drops. */
export class BoundedBuffer {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;

  constructor(private readonly limit: number) {}

  /** False when the chunk did not fit completely. */
  add(chunk: Buffer): boolean {
    const room = this.limit - this.size;
    if (chunk.length <= room) {
      this.chunks.push(chunk);
      this.size += chunk.length;
      return true;
    }
    if (room > 0) this.chunks.push(chunk.subarray(0, room));
    this.size += Math.max(room, 0);
    this.dropped += chunk.length - Math.max(room, 0);
    return false;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.size);
  }
}
