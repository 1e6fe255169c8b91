/**
 * A sandboxed command started as a long-lived process, its stdin and stdout left open for the caller (a
 * protocol spoken over them, such as an MCP stdio server). Like `runProcess` it runs in its own process
 * group, gets the namespace-init plan on fd 3 when there is one, keeps only the first bytes of stderr, and
 * leaves nothing behind: when it exits, or is stopped, the whole group is killed and waited for.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { isErrno } from './path-jail.js';
import { BoundedBuffer, childrenOf, killProcess, waitForGroupExit } from './process-run.js';

export interface ProcessSessionRequest {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly uid?: number;
  readonly gid?: number;
  /** Written to fd 3 (then closed); fd 4 is then the sandbox's status channel, drained. */
  readonly control?: Buffer;
  /** The process is a supervisor (unshare): stop it by killing its children (see `runProcess`). */
  readonly stopThroughChildren?: boolean;
  readonly maxStderrBytes: number;
}

export interface SessionExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

export interface ProcessSession {
  readonly stdin: Writable;
  readonly stdout: Readable;
  stderr(): string;
  readonly exited: Promise<SessionExit>;
  stop(): Promise<SessionExit>;
}

/** How long a supervisor gets to exit after its child was killed before the whole group is. */
const SUPERVISOR_EXIT_GRACE_MS = 2_000;

export function startProcessSession(request: ProcessSessionRequest): ProcessSession {
  const withControl = request.control !== undefined;
  const child = spawn(request.command, [...request.args], {
    cwd: request.cwd,
    env: request.env,
    ...(request.uid === undefined ? {} : { uid: request.uid }),
    ...(request.gid === undefined ? {} : { gid: request.gid }),
    detached: true,
    stdio: withControl ? ['pipe', 'pipe', 'pipe', 'pipe', 'pipe'] : ['pipe', 'pipe', 'pipe'],
  });
  const stderr = new BoundedBuffer(request.maxStderrBytes);
  child.stderr?.on('data', (chunk: Buffer) => stderr.add(chunk));
  if (withControl) {
    const status = child.stdio[4] as Readable;
    status.on('data', () => undefined);
    status.on('error', () => undefined);
    const control = child.stdio[3] as Writable;
    control.on('error', () => undefined);
    control.end(request.control);
  }
  child.stdin?.on('error', () => undefined);

  const killGroup = () => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch (error) {
      if (!isErrno(error, 'ESRCH')) throw error;
    }
  };
  let exit: SessionExit = { exitCode: null, signal: null };
  let graceTimer: NodeJS.Timeout | undefined;
  const exited = new Promise<SessionExit>((resolve) => {
    child.on('exit', (code, signal) => {
      exit = { exitCode: code, signal };
      clearTimeout(graceTimer);
      killGroup();
    });
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      void waitForGroupExit(child.pid).then(() => resolve(exit));
    };
    child.on('close', finish);
    child.on('error', () => {
      // Not started at all: no 'close' follows.
      if (child.pid === undefined) finish();
    });
  });

  const stop = (): Promise<SessionExit> => {
    const pid = child.pid;
    if (request.stopThroughChildren === true && pid !== undefined) {
      const children = childrenOf(pid);
      for (const childPid of children) killProcess(childPid);
      if (children.length > 0) graceTimer ??= setTimeout(killGroup, SUPERVISOR_EXIT_GRACE_MS);
      else killGroup();
    } else {
      killGroup();
    }
    return exited;
  };

  if (child.stdin === null || child.stdout === null) throw new Error('the process has no stdin or stdout');
  return {
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: () => stderr.bytes().toString('utf8'),
    exited,
    stop,
  };
}
