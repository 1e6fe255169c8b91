/**
 * Turns "run this argv in this root" into the process the runner actually spawns.
 *
 * With namespaces: `unshare` gives the run private mount, pid, network, System V IPC and UTS namespaces
 * (killing its first process kills every process in it, even ones that left the process group; the
 * network namespace has nothing but the loopback the proxy relay uses; shared-memory segments, message
 * queues and semaphores die with the run; the host name is the run's own). Inside, our namespace-init
 * helper first enters the run's cgroup (cgroups.ts) when it has one, then builds the run's root from the
 * plan (sandbox-root.ts), pivots into it, and starts the command.
 *
 * The helper runs as root and gets no environment. The script's environment is applied only by a
 * process that has already dropped privileges:
 * - runner is root: the helper starts the command with the sandbox user's uid/gid (supplementary groups
 *   cleared, all capabilities lost with the uid change) and the environment; `prlimit` and then
 *   `setpriv --no-new-privs` run as that user before the interpreter;
 * - runner is not root (user namespace, mapped to root there): `setpriv` drops every capability with an
 *   empty environment, and `env -i` sets the variables last, just before the interpreter.
 * Without namespaces (`requireIsolation: false`) the same chain is spawned directly.
 */
import { fileURLToPath } from 'node:url';
import type { SandboxUser } from './policy.js';
import { CONTROL_DIR, PROXY_PORT, type RootEntry } from './sandbox-root.js';

/** The host name a run sees (its UTS namespace's own). */
export const SANDBOX_HOSTNAME = 'sandbox';

export const NAMESPACE_INIT_SCRIPT = fileURLToPath(new URL('../sandbox/namespace-init.mjs', import.meta.url));

export interface SandboxTools {
  readonly unshare: string | undefined;
  readonly mount: string | undefined;
  readonly umount: string | undefined;
  readonly pivotRoot: string | undefined;
  readonly setpriv: string | undefined;
  readonly prlimit: string | undefined;
  /** iproute2's `ip`, to bring up the loopback the proxy relay listens on; needed only with network. */
  readonly ip: string | undefined;
  /** coreutils' `env`, which applies the environment when the runner is not root. */
  readonly env: string | undefined;
  /** The node that runs the namespace-init helper (the runner's own). */
  readonly helperNode: string;
}

export interface SandboxHost {
  readonly tools: SandboxTools;
  /** Whether the runner is root (then scripts run as `user`); otherwise a user namespace maps us to root. */
  readonly root: boolean;
  readonly user: SandboxUser;
  readonly namespaces: boolean;
}

/** Memory is RLIMIT_AS or RLIMIT_DATA depending on the runtime (see `ResourceLimits.memoryBytes`). */
export interface ProcessLimits {
  readonly cpuSeconds?: number;
  readonly memory?: { readonly kind: 'address-space' | 'data'; readonly bytes: number };
  readonly maxProcesses?: number;
  readonly maxFileSizeBytes?: number;
}

export interface DirectoryOverlay {
  /** The directory the overlay is mounted on (the script's directory). */
  readonly target: string;
  /** Top first. */
  readonly lowerDirs: readonly string[];
  /** Where writes through the overlay land; without it the overlay is read-only. */
  readonly upper?: { readonly upperDir: string; readonly workDir: string };
}

/** The run's file system, for the namespace sandbox. */
export interface SandboxRoot {
  /** Empty host directory the helper mounts the new root on. */
  readonly dir: string;
  readonly entries: readonly RootEntry[];
  /** Whether the helper relays the loopback proxy port to the socket in `CONTROL_DIR`. */
  readonly proxy: boolean;
  /** The run's cgroup: `cgroup.procs` files the helper writes itself into before anything else. */
  readonly cgroupProcs?: readonly string[];
}

export interface SandboxedCommand {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly limits: ProcessLimits;
  /** Required with namespaces. */
  readonly root?: SandboxRoot;
}

export interface Invocation {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Identity the process is started with (the runner is root and runs without namespaces). */
  readonly uid?: number;
  readonly gid?: number;
  /** The namespace-init plan, sent on fd 3; absent when running without namespaces. */
  readonly control?: Buffer;
  /** `unshare` supervises the namespace: stop it by killing its child (see `runProcess`). */
  readonly stopThroughChildren?: boolean;
}

export function buildInvocation(host: SandboxHost, run: SandboxedCommand): Invocation {
  const limits = limitsPrefix(host.tools.prlimit, run.limits);
  if (!host.namespaces) {
    const [command, ...args] = [...limits, ...noNewPrivileges(host.tools.setpriv), ...run.argv];
    if (command === undefined) throw new TypeError('empty command');
    const identity = host.root ? { uid: host.user.uid, gid: host.user.gid } : {};
    return { command, args, env: run.env, cwd: run.cwd, ...identity };
  }
  if (run.root === undefined) throw new TypeError('the namespace sandbox needs a root plan');
  const chain = host.root
    ? {
        command: [...limits, ...noNewPrivileges(host.tools.setpriv), ...run.argv],
        env: run.env,
        identity: { uid: host.user.uid, gid: host.user.gid },
      }
    : {
        command: [
          ...dropCapabilities(host.tools),
          ...limits,
          ...applyEnvironment(host.tools, run.env),
          ...run.argv,
        ],
        env: {},
        identity: undefined,
      };
  return namespaceInvocation(host, run.root, {
    command: chain.command,
    env: chain.env,
    ...(chain.identity === undefined ? {} : { identity: chain.identity }),
    cwd: run.cwd,
  });
}

/** The plan the host probe sends: build the root, run nothing. */
export function probeInvocation(host: SandboxHost, root: SandboxRoot): Invocation {
  return namespaceInvocation(host, root, { probe: true, command: [], env: {}, cwd: '/' });
}

function namespaceInvocation(host: SandboxHost, root: SandboxRoot, run: Record<string, unknown>): Invocation {
  const { unshare, mount, umount, pivotRoot, ip } = host.tools;
  if (unshare === undefined || mount === undefined || umount === undefined || pivotRoot === undefined) {
    throw new TypeError('namespaces need unshare, mount, umount and pivot_root');
  }
  if (root.proxy && ip === undefined) throw new TypeError('the proxy relay needs ip');
  const plan = {
    ...run,
    tools: { mount, umount, pivotRoot, ip },
    root: root.dir,
    entries: root.entries,
    ...(root.proxy ? { proxy: { socket: `${CONTROL_DIR}/proxy.sock`, port: PROXY_PORT } } : {}),
    ...(root.cgroupProcs === undefined ? {} : { cgroupProcs: root.cgroupProcs }),
    hostname: SANDBOX_HOSTNAME,
  };
  return {
    command: unshare,
    args: [...namespaceArgs(host), host.tools.helperNode, NAMESPACE_INIT_SCRIPT],
    // The helper runs as root: it gets no variables at all.
    env: {},
    cwd: '/',
    control: Buffer.from(JSON.stringify(plan)),
    stopThroughChildren: true,
  };
}

function namespaceArgs(host: SandboxHost): string[] {
  return [
    ...(host.root ? [] : ['--user', '--map-root-user']),
    '--mount',
    '--propagation',
    'private',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    // Always: with network granted the only way out is the proxy relay on this namespace's loopback.
    '--net',
    // System V shared memory, semaphores and message queues of the run's own, gone when it ends.
    '--ipc',
    '--uts',
    '--',
  ];
}

function noNewPrivileges(setpriv: string | undefined): string[] {
  // Run as the target user already: nothing left to drop but the ability to regain (set-uid files are
  // also neutralised by the nosuid mounts).
  return setpriv === undefined ? [] : [setpriv, '--no-new-privs', '--inh-caps=-all', '--'];
}

function dropCapabilities(tools: SandboxTools): string[] {
  if (tools.setpriv === undefined) throw new TypeError('the user-namespace sandbox needs setpriv');
  return [tools.setpriv, '--no-new-privs', '--bounding-set=-all', '--inh-caps=-all', '--'];
}

function applyEnvironment(tools: SandboxTools, env: Readonly<Record<string, string>>): string[] {
  if (tools.env === undefined) throw new TypeError('the user-namespace sandbox needs env');
  return [tools.env, '-i', ...Object.entries(env).map(([name, value]) => `${name}=${value}`)];
}

function limitsPrefix(prlimit: string | undefined, limits: ProcessLimits): string[] {
  if (prlimit === undefined) return [];
  const args: string[] = [];
  // Soft limit: SIGXCPU (which names the cause); one second later the hard limit's SIGKILL.
  if (limits.cpuSeconds !== undefined) args.push(`--cpu=${limits.cpuSeconds}:${limits.cpuSeconds + 1}`);
  if (limits.memory !== undefined) {
    args.push(`${limits.memory.kind === 'address-space' ? '--as' : '--data'}=${limits.memory.bytes}`);
  }
  if (limits.maxProcesses !== undefined) args.push(`--nproc=${limits.maxProcesses}`);
  if (limits.maxFileSizeBytes !== undefined) args.push(`--fsize=${limits.maxFileSizeBytes}`);
  return args.length === 0 ? [] : [prlimit, ...args, '--'];
}

/** How the sandboxed command ended, as the namespace-init helper reported it (or the process itself). */
export type SandboxExit =
  | { readonly kind: 'exit'; readonly exitCode: number | null; readonly signal: string | null }
  | { readonly kind: 'setup-error'; readonly message: string }
  /** The helper died without reporting (killed on timeout or output overflow). */
  | { readonly kind: 'unreported' };

export function sandboxExit(
  outcome: { readonly status: string; readonly exitCode: number | null; readonly signal: string | null },
  namespaces: boolean,
): SandboxExit {
  if (!namespaces) return { kind: 'exit', exitCode: outcome.exitCode, signal: outcome.signal };
  // The helper writes one line last; anything before it could only come from the script (fd 4 is
  // inherited), so only the final line counts.
  const last = outcome.status.trimEnd().split('\n').pop() ?? '';
  try {
    const parsed = JSON.parse(last) as Record<string, unknown>;
    if (parsed['kind'] === 'setup-error' && typeof parsed['message'] === 'string') {
      return { kind: 'setup-error', message: parsed['message'] };
    }
    if (parsed['kind'] === 'exit') {
      const exitCode = typeof parsed['exitCode'] === 'number' ? parsed['exitCode'] : null;
      const signal = typeof parsed['signal'] === 'string' ? parsed['signal'] : null;
      return { kind: 'exit', exitCode, signal };
    }
  } catch {
    // fall through
  }
  return { kind: 'unreported' };
}
