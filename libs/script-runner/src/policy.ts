/**
 * The runner's global policy (what the host allows every script) and its defaults. A tool's
 * `securityContext` is only a request; what it gets is what this policy also allows.
 */
import { isAbsolute, resolve } from 'node:path';
import { refusedEnvironmentVariable } from './environment.js';
import { isInside } from './path-jail.js';

export interface LanguageCommand {
  /** Interpreter executable (absolute path or a name looked up on the host's PATH). */
  readonly command: string;
}

export interface NodeLanguageCommand extends LanguageCommand {
  /** npm's `npm-cli.js`, run with `command`; found next to `command` when not given. */
  readonly npmCli?: string;
}

export interface LanguageCommands {
  readonly python?: LanguageCommand;
  readonly nodejs?: NodeLanguageCommand;
  readonly bun?: LanguageCommand;
}

export interface ResourceLimits {
  /** CPU seconds (RLIMIT_CPU); the script gets SIGXCPU when it uses them up. */
  readonly cpuSeconds: number;
  /**
   * Memory in bytes: RLIMIT_AS for Python, RLIMIT_DATA for Node and Bun, whose engines reserve gigabytes
   * of address space up front (Node 24 needs about 600 MB of RLIMIT_DATA just to start).
   */
  readonly memoryBytes: number;
  /** Processes of the sandbox user (RLIMIT_NPROC; counted per user, so use a dedicated uid). */
  readonly maxProcesses: number;
  /** Largest file the script may write (RLIMIT_FSIZE). */
  readonly maxFileSizeBytes: number;
  /**
   * Memory of all of a run's processes together (its cgroup's memory.max, swap not allowed; includes
   * what it keeps in its scratch tmpfs and shared memory). Default: `memoryBytes`. Past it the kernel
   * kills the run. Only where cgroups can be used (see `RunnerCapabilities.cgroup`).
   */
  readonly runMemoryBytes: number;
  /** CPU weight of a run against other runs and the host (cgroup v2 cpu.weight, 1-10000; 100 is normal). */
  readonly cpuWeight: number;
  /** Size of a run's scratch home (HOME and TMPDIR, a tmpfs): all its files together. */
  readonly scratchBytes: number;
}

/** The identity scripts run as when the runner is root. */
export interface SandboxUser {
  readonly uid: number;
  readonly gid: number;
}

export interface ScriptRunnerPolicy {
  /** Scripts live under this directory; `scriptPath`s are relative to it. */
  readonly baseDir: string;
  /** Dependency environments and per-run scratch directories. Must not lie inside `baseDir`. */
  readonly cacheDir: string;
  /**
   * The environment allow-listed variables are taken from and the PATH tools are looked up on
   * (normally the host's `process.env`; the library never reads it itself).
   */
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  /** Interpreters; python3, node and bun are looked up on the host's PATH when not given. */
  readonly languages?: LanguageCommands;
  readonly defaultTimeoutMs?: number;
  readonly maxInputBytes?: number;
  readonly maxOutputBytes?: number;
  readonly maxStderrBytes?: number;
  readonly limits?: Partial<ResourceLimits>;
  /**
   * Names of host variables a script may see. Nothing else of the host's environment reaches it.
   * Variables that change loading (`LD_*`, `NODE_OPTIONS`, `PYTHONPATH`, ...) are refused.
   */
  readonly envAllowList?: readonly string[];
  /** Absolute directories a tool may be granted write access to. Empty: no tool may write anywhere. */
  readonly allowWritePaths?: readonly string[];
  /**
   * Absolute paths a tool may be granted read access to (`fileAccess.allowRead`) outside its own
   * directory; the write paths are readable too. Empty: a tool reads only its own directory.
   */
  readonly allowReadPaths?: readonly string[];
  /**
   * Absolute paths every run sees read-only, for interpreters that need more than the system
   * directories and their own `bin`/`lib` (e.g. a data directory of a runtime under /opt).
   */
  readonly runtimePaths?: readonly string[];
  /**
   * Hosts a tool may be granted network access for: `*` any public host, `*.example.com` a domain, or a
   * name or address. Loopback, private and link-local addresses are reached only when named here (not
   * through `*`). Scripts reach granted hosts only through the run's filtering HTTP proxy.
   */
  readonly allowNetworkHosts?: readonly string[];
  /** Whether dependency installs may reach public hosts (a registry) through the proxy; default false. */
  readonly allowDependencyNetwork?: boolean;
  readonly dependencyTimeoutMs?: number;
  /** Default nobody (65534). Only used when the runner is root. */
  readonly sandboxUser?: SandboxUser;
  /**
   * When true (default), a host that cannot create the namespace sandbox refuses to run scripts
   * (`SecurityError`). When false, scripts then run without filesystem and network isolation (they see
   * the host's files as the sandbox user does) and the result's logs say so.
   */
  readonly requireIsolation?: boolean;
  /**
   * When true (default, seed 003 §2.1.3: "stderr 有内容或退出码非0，判定为错误"), a script that writes
   * anything to stderr has failed even when it exits 0. When false, only the exit code and the output
   * decide, and stderr goes to the result's logs.
   */
  readonly stderrIsError?: boolean;
}

/** The policy with every default filled in. */
export interface ResolvedPolicy {
  readonly baseDir: string;
  readonly cacheDir: string;
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly languages: LanguageCommands;
  readonly defaultTimeoutMs: number;
  readonly maxInputBytes: number;
  readonly maxOutputBytes: number;
  readonly maxStderrBytes: number;
  readonly limits: ResourceLimits;
  readonly envAllowList: readonly string[];
  readonly allowWritePaths: readonly string[];
  readonly allowReadPaths: readonly string[];
  readonly runtimePaths: readonly string[];
  readonly allowNetworkHosts: readonly string[];
  readonly allowDependencyNetwork: boolean;
  readonly dependencyTimeoutMs: number;
  readonly sandboxUser: SandboxUser;
  readonly requireIsolation: boolean;
  readonly stderrIsError: boolean;
}

export const POLICY_DEFAULTS = {
  defaultTimeoutMs: 30_000,
  maxInputBytes: 1024 * 1024,
  maxOutputBytes: 4 * 1024 * 1024,
  maxStderrBytes: 64 * 1024,
  limits: {
    cpuSeconds: 30,
    memoryBytes: 1024 * 1024 * 1024,
    maxProcesses: 64,
    maxFileSizeBytes: 64 * 1024 * 1024,
    cpuWeight: 100,
    scratchBytes: 64 * 1024 * 1024,
  },
  envAllowList: ['PATH', 'LANG', 'LC_ALL', 'TZ'],
  dependencyTimeoutMs: 5 * 60_000,
  sandboxUser: { uid: 65534, gid: 65534 },
} as const;

/** Fills in defaults; throws (a configuration bug) on relative directories or non-positive limits. */
export function resolvePolicy(policy: ScriptRunnerPolicy): ResolvedPolicy {
  for (const [name, dir] of [
    ['baseDir', policy.baseDir],
    ['cacheDir', policy.cacheDir],
    ...(policy.allowWritePaths ?? []).map((path) => ['allowWritePaths entry', path] as const),
    ...(policy.allowReadPaths ?? []).map((path) => ['allowReadPaths entry', path] as const),
    ...(policy.runtimePaths ?? []).map((path) => ['runtimePaths entry', path] as const),
  ] as const) {
    if (!isAbsolute(dir)) throw new TypeError(`${name} must be an absolute path, got "${dir}"`);
  }
  for (const name of policy.envAllowList ?? []) {
    const refusal = refusedEnvironmentVariable(name);
    if (refusal !== undefined) throw new TypeError(`envAllowList must not name ${refusal}`);
  }
  if (isInside(resolve(policy.baseDir), resolve(policy.cacheDir))) {
    // Environments are overlaid onto script directories; overlayfs refuses overlapping layers.
    throw new TypeError('cacheDir must not lie inside baseDir');
  }
  const resolved: ResolvedPolicy = {
    baseDir: policy.baseDir,
    cacheDir: policy.cacheDir,
    hostEnv: policy.hostEnv,
    languages: policy.languages ?? {},
    defaultTimeoutMs: policy.defaultTimeoutMs ?? POLICY_DEFAULTS.defaultTimeoutMs,
    maxInputBytes: policy.maxInputBytes ?? POLICY_DEFAULTS.maxInputBytes,
    maxOutputBytes: policy.maxOutputBytes ?? POLICY_DEFAULTS.maxOutputBytes,
    maxStderrBytes: policy.maxStderrBytes ?? POLICY_DEFAULTS.maxStderrBytes,
    limits: {
      ...POLICY_DEFAULTS.limits,
      runMemoryBytes: policy.limits?.memoryBytes ?? POLICY_DEFAULTS.limits.memoryBytes,
      ...policy.limits,
    },
    envAllowList: policy.envAllowList ?? POLICY_DEFAULTS.envAllowList,
    allowWritePaths: policy.allowWritePaths ?? [],
    allowReadPaths: policy.allowReadPaths ?? [],
    runtimePaths: policy.runtimePaths ?? [],
    allowNetworkHosts: policy.allowNetworkHosts ?? [],
    allowDependencyNetwork: policy.allowDependencyNetwork ?? false,
    dependencyTimeoutMs: policy.dependencyTimeoutMs ?? POLICY_DEFAULTS.dependencyTimeoutMs,
    sandboxUser: policy.sandboxUser ?? POLICY_DEFAULTS.sandboxUser,
    requireIsolation: policy.requireIsolation ?? true,
    stderrIsError: policy.stderrIsError ?? true,
  };
  const positive: Record<string, number> = {
    defaultTimeoutMs: resolved.defaultTimeoutMs,
    maxInputBytes: resolved.maxInputBytes,
    maxOutputBytes: resolved.maxOutputBytes,
    maxStderrBytes: resolved.maxStderrBytes,
    dependencyTimeoutMs: resolved.dependencyTimeoutMs,
    ...resolved.limits,
  };
  for (const [name, value] of Object.entries(positive)) {
    if (!Number.isInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive integer`);
  }
  if (resolved.limits.cpuWeight > 10_000) throw new TypeError('cpuWeight must lie between 1 and 10000');
  return resolved;
}
