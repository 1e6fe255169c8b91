/**
 * Turns "run this argv with these grants" into the process the runner actually spawns.
 *
 * With namespaces: `unshare` gives the run a private mount namespace, a pid namespace (killing its first
 * process kills every process in it, even ones that left the process group) and, unless network was
 * granted, an empty network namespace (no interfaces up, so every connection fails). Inside, our
 * namespace-init helper makes every mount read-only and re-binds only the granted paths read-write.
 * The command itself then drops to the sandbox user with no capabilities (`setpriv`) under rlimits
 * (`prlimit`). Without namespaces only the last two steps apply.
 */
import { fileURLToPath } from 'node:url';
import type { SandboxUser } from './policy.js';

export const NAMESPACE_INIT_SCRIPT = fileURLToPath(new URL('../sandbox/namespace-init.mjs', import.meta.url));

export interface SandboxTools {
  readonly unshare: string | undefined;
  readonly mount: string | undefined;
  readonly setpriv: string | undefined;
  readonly prlimit: string | undefined;
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

export interface SandboxedCommand {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly writablePaths: readonly string[];
  readonly network: boolean;
  readonly limits: ProcessLimits;
  readonly overlay?: DirectoryOverlay;
}

export interface Invocation {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** The namespace-init plan, sent on fd 3; absent when running without namespaces. */
  readonly control?: Buffer;
  /** `unshare` supervises the namespace: stop it by killing its child (see `runProcess`). */
  readonly stopThroughChildren?: boolean;
}

export function buildInvocation(host: SandboxHost, run: SandboxedCommand): Invocation {
  const argv = [...identityPrefix(host), ...limitsPrefix(host.tools.prlimit, run.limits), ...run.argv];
  if (!host.namespaces) {
    const [command, ...args] = argv;
    if (command === undefined) throw new TypeError('empty command');
    return { command, args, env: run.env, cwd: run.cwd };
  }
  const { unshare, mount } = host.tools;
  if (unshare === undefined || mount === undefined) throw new TypeError('namespaces need unshare and mount');
  const plan = {
    mountCommand: mount,
    writablePaths: run.writablePaths,
    overlay:
      run.overlay === undefined
        ? undefined
        : {
            target: run.overlay.target,
            lowerDirs: run.overlay.lowerDirs,
            upperDir: run.overlay.upper?.upperDir,
            workDir: run.overlay.upper?.workDir,
          },
    command: argv,
    env: run.env,
    cwd: run.cwd,
  };
  return {
    command: unshare,
    args: [...namespaceArgs(host, run.network), host.tools.helperNode, NAMESPACE_INIT_SCRIPT],
    // The helper runs as root: it gets no variables at all (NODE_OPTIONS from a tool must not reach it).
    env: {},
    cwd: '/',
    control: Buffer.from(JSON.stringify(plan)),
    stopThroughChildren: true,
  };
}

/** The plan the host probe sends: set up the filesystem, run nothing. */
export function probeInvocation(host: SandboxHost): Invocation {
  const { unshare, mount } = host.tools;
  if (unshare === undefined || mount === undefined) throw new TypeError('namespaces need unshare and mount');
  return {
    command: unshare,
    args: [...namespaceArgs(host, false), host.tools.helperNode, NAMESPACE_INIT_SCRIPT],
    env: {},
    cwd: '/',
    control: Buffer.from(
      JSON.stringify({ probe: true, mountCommand: mount, writablePaths: [], command: [], env: {}, cwd: '/' }),
    ),
    stopThroughChildren: true,
  };
}

function namespaceArgs(host: SandboxHost, network: boolean): string[] {
  return [
    ...(host.root ? [] : ['--user', '--map-root-user']),
    '--mount',
    '--propagation',
    'private',
    '--pid',
    '--fork',
    '--kill-child',
    '--mount-proc',
    ...(network ? [] : ['--net']),
    '--',
  ];
}

function identityPrefix(host: SandboxHost): string[] {
  const { setpriv } = host.tools;
  if (setpriv === undefined) return [];
  const dropCapabilities = ['--no-new-privs', '--bounding-set=-all', '--inh-caps=-all'];
  if (host.root) {
    const { uid, gid } = host.user;
    return [setpriv, `--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', ...dropCapabilities, '--'];
  }
  // Mapped to root in our own user namespace: keep the uid, lose the capabilities.
  return host.namespaces ? [setpriv, ...dropCapabilities, '--'] : [setpriv, '--no-new-privs', '--'];
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
