/**
 * `ScriptRunner`: seed 003's ExternalScriptExecutionService. Runs one script tool per call in the
 * sandbox (see sandbox.ts) with JSON in on stdin and JSON out on stdout, and answers with the seed's
 * `ScriptExecutionResult`. Expected failures come back as results; only bugs throw.
 */
import { realpath } from 'node:fs/promises';
import type { Readable, Writable } from 'node:stream';
import type { ScriptLanguage, ToolJsonSecurityContext } from '@agentmesh/protocol';
import { watchMemory, type RunCgroup, type RunCgroupLimits } from './cgroups.js';
import { DependencyEnvironments, type BuildStep, type StepOutcome } from './dependency-env.js';
import { startEgressProxy, type EgressProxy } from './egress-proxy.js';
import { proxyVariables, scriptEnvironment } from './environment.js';
import {
  DependencyError,
  InputError,
  ScriptError,
  ScriptRunnerError,
  SecurityError,
  TimeoutError,
  type ExitStatus,
  type ScriptErrorType,
} from './errors.js';
import { isReachableBy } from './executables.js';
import { egressDecision, grantAccess, type EgressDecision } from './grants.js';
import { probeHost, type HostReport } from './host-probe.js';
import { checkOutput } from './output-schema.js';
import { entryPointArgs } from './entry-point.js';
import { jailScriptPath } from './path-jail.js';
import { resolvePolicy, type ResolvedPolicy, type ScriptRunnerPolicy } from './policy.js';
import { runProcess, type ProcessOutcome } from './process-run.js';
import { startProcessSession, type ProcessSession } from './process-session.js';
import {
  buildInvocation,
  sandboxExit,
  type Invocation,
  type ProcessLimits,
  type SandboxExit,
} from './sandbox.js';
import { planRoot, PROXY_PORT, SANDBOX_HOME, type RootRequest } from './sandbox-root.js';
import { createScratch } from './scratch.js';

/** Seed 003 §2.1.3 `ScriptExecutionParams`, plus what the tool file declares for this run. */
export interface ScriptExecutionParams {
  readonly toolId: string;
  /** Relative to the policy's `baseDir`. */
  readonly scriptPath: string;
  readonly language: ScriptLanguage;
  readonly inputData?: Record<string, unknown>;
  readonly timeoutMs?: number;
  /**
   * A function of the script to call with the input instead of running the script as a program (seed 003
   * `handler.entryPoint`; python and nodejs). Its return value is the output.
   */
  readonly entryPoint?: string;
  /**
   * Variables the tool declares; they are added to the allow-listed host variables. Variables that
   * change loading (`LD_*`, `NODE_OPTIONS`, `PYTHONPATH`, ...) are refused with a `SecurityError`.
   */
  readonly env?: Readonly<Record<string, string>>;
  readonly securityContext?: ToolJsonSecurityContext;
  /** The tool's `output` JSON Schema; `outputData` must match it. */
  readonly outputSchema?: object;
  /** Called with the pid (= process group id) of the sandbox's first process. */
  readonly onSpawn?: (pid: number) => void;
}

/** A script started as a long-lived process with its stdin and stdout open (`ScriptRunner.start`). */
export interface ScriptSessionParams {
  readonly toolId: string;
  /** Relative to the policy's `baseDir`. */
  readonly scriptPath: string;
  readonly language: ScriptLanguage;
  /** Arguments after the script. */
  readonly args?: readonly string[];
  /** As for a run: added to the allow-listed host variables; loader variables are refused. */
  readonly env?: Readonly<Record<string, string>>;
  readonly securityContext?: ToolJsonSecurityContext;
}

export interface ScriptSession {
  readonly stdin: Writable;
  readonly stdout: Readable;
  /** The runner's notes (grants, refusals) for this session. */
  readonly logs: readonly string[];
  /** What the process wrote to stderr so far (bounded). */
  stderr(): string;
  /** Resolves when the process and every process it started are gone, and the sandbox is removed. */
  readonly exited: Promise<ScriptSessionExit>;
  /** Kills the process with everything it started; resolves as `exited` does. */
  stop(): Promise<ScriptSessionExit>;
}

export interface ScriptSessionExit {
  readonly exitCode: number | null;
  readonly signal: string | null;
  /** The session's processes together went past its memory limit and the kernel killed them. */
  readonly memoryLimitExceeded?: boolean;
}

export interface ScriptExecutionError {
  readonly type: ScriptErrorType;
  readonly message: string;
  readonly details?: string;
  readonly code: string;
  readonly retryable: boolean;
  readonly exitCode?: number | null;
  readonly signal?: string | null;
}

/** Seed 003 §2.1.3 `ScriptExecutionResult`. */
export interface ScriptExecutionResult {
  readonly success: boolean;
  readonly outputData?: Record<string, unknown>;
  readonly error?: ScriptExecutionError;
  /** The runner's notes (grants, refusals, environment builds) and the script's stderr (truncated). */
  readonly logs?: string[];
}

/** What this host gives scripts, for operators and for tests that must skip. */
export interface RunnerCapabilities {
  readonly isolation: boolean;
  readonly isolationUnavailable?: string;
  /** Whether a tool can be granted network (through the filtering proxy; needs isolation and `ip`). */
  readonly network: boolean;
  readonly networkUnavailable?: string;
  readonly resourceLimits: boolean;
  /**
   * Per-run cgroups (memory of all of a run's processes together, tasks, CPU weight): which version
   * and where. Absent when runs get the per-process rlimits only; `cgroupUnavailable` says why.
   */
  readonly cgroup?: { readonly version: 1 | 2; readonly description: string };
  readonly cgroupUnavailable?: string;
  /** Size of each run's scratch tmpfs (with the namespace sandbox). */
  readonly scratchBytes: number;
  readonly interpreters: Partial<Record<ScriptLanguage, string>>;
  readonly unavailableLanguages: Partial<Record<ScriptLanguage, string>>;
}

/** One sandboxed process: a script run or a dependency build step. */
interface SandboxedRun {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly scriptDir: string;
  readonly overlay?: {
    readonly lowerDirs: readonly string[];
    readonly upper?: { readonly upperDir: string; readonly workDir: string };
  };
  readonly runtimePaths: readonly string[];
  readonly readablePaths: readonly string[];
  readonly writablePaths: readonly string[];
  /** Which hosts the run's proxy lets through; absent: no network at all. */
  readonly network: ((host: string) => EgressDecision) | undefined;
  readonly limits: ProcessLimits;
  /** The run's cgroup limits; absent: no cgroup (dependency builds). */
  readonly cgroupLimits?: RunCgroupLimits;
  /** The scratch home: a size-limited tmpfs (script runs) or the host scratch directory (builds). */
  readonly home: 'tmpfs' | 'host';
  readonly declaredEnv: Readonly<Record<string, string>> | undefined;
  readonly stdin: Buffer;
  readonly timeoutMs: number;
  readonly maxStdoutBytes: number;
  /** The run's logs, for the proxy's refusals. */
  readonly logs: string[];
  readonly onSpawn?: (pid: number) => void;
}

const LANGUAGES: readonly ScriptLanguage[] = ['python', 'nodejs', 'bun'];

function checkScriptParams(params: { toolId: unknown; language: unknown }): void {
  if (typeof params.toolId !== 'string' || params.toolId === '') throw new InputError('toolId must be given');
  if (!LANGUAGES.includes(params.language as ScriptLanguage))
    throw new InputError(`unknown script language "${String(params.language)}"`);
}
const BUILD_OUTPUT_BYTES = 1024 * 1024;
/** Tasks the sandbox's own helper (a node process with its threads, and the mounts it runs) may use. */
const HELPER_TASKS = 16;
const MIB = 1024 * 1024;
const EXCERPT_CHARS = 2_000;

export class ScriptRunner {
  private readonly policy: ResolvedPolicy;
  private hostReport: Promise<HostReport> | undefined;
  private environments: DependencyEnvironments | undefined;

  constructor(policy: ScriptRunnerPolicy) {
    this.policy = resolvePolicy(policy);
  }

  /** Runs the script; every expected failure is a result with `success: false`. */
  async run(params: ScriptExecutionParams): Promise<ScriptExecutionResult> {
    const logs: string[] = [];
    try {
      const outputData = await this.execute(params, logs);
      return { success: true, outputData, ...(logs.length > 0 ? { logs } : {}) };
    } catch (error) {
      if (!(error instanceof ScriptRunnerError)) throw error;
      return { success: false, error: toExecutionError(error), ...(logs.length > 0 ? { logs } : {}) };
    }
  }

  /** Like `run`, for callers who prefer exceptions: the output, or one of the error classes thrown. */
  async runOrThrow(params: ScriptExecutionParams): Promise<Record<string, unknown>> {
    return this.execute(params, []);
  }

  async capabilities(): Promise<RunnerCapabilities> {
    const host = await this.host();
    const interpreters: Partial<Record<ScriptLanguage, string>> = {};
    for (const language of LANGUAGES) {
      const found = host.interpreters[language];
      if (found !== undefined) interpreters[language] = found.command;
    }
    const networkUnavailable = host.isolationUnavailable ?? host.networkUnavailable;
    return {
      isolation: host.sandbox.namespaces,
      ...(host.isolationUnavailable === undefined ? {} : { isolationUnavailable: host.isolationUnavailable }),
      network: networkUnavailable === undefined,
      ...(networkUnavailable === undefined ? {} : { networkUnavailable }),
      resourceLimits: host.limitsUnavailable === undefined,
      ...(host.cgroups === undefined
        ? {}
        : { cgroup: { version: host.cgroups.version, description: host.cgroups.description } }),
      ...(host.cgroupsUnavailable === undefined ? {} : { cgroupUnavailable: host.cgroupsUnavailable }),
      scratchBytes: this.policy.limits.scratchBytes,
      interpreters,
      unavailableLanguages: host.interpreters.unavailable,
    };
  }

  private host(): Promise<HostReport> {
    this.hostReport ??= probeHost(this.policy, process.execPath);
    return this.hostReport;
  }

  private async execute(params: ScriptExecutionParams, logs: string[]): Promise<Record<string, unknown>> {
    const timeoutMs = params.timeoutMs ?? this.policy.defaultTimeoutMs;
    checkScriptParams(params);
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0)
      throw new InputError('timeoutMs must be a positive integer');
    const stdin = this.encodeInput(params.inputData);
    const { host, plan } = await this.prepareScript(params, logs, []);
    const { outcome, exit, memoryLimitExceeded } = await this.runSandboxed(host, {
      ...plan,
      stdin,
      timeoutMs,
      maxStdoutBytes: this.policy.maxOutputBytes,
      logs,
      ...(params.onSpawn === undefined ? {} : { onSpawn: params.onSpawn }),
    });
    if (outcome.stderr !== '') logs.push(`stderr: ${describeStderr(outcome)}`);
    const output = this.interpret(outcome, exit, timeoutMs, memoryLimitExceeded === true);
    if (params.outputSchema !== undefined) checkOutput(params.outputSchema, output);
    return output;
  }

  /**
   * Starts the script as a long-lived process in the sandbox, under the same rules as a run (path jail,
   * grants, namespaces, rlimits, environment, network through the proxy), with its stdin and stdout left
   * open for a protocol spoken over them (an MCP stdio server). No time limit: it lives until `stop()` or
   * until it exits (the CPU rlimit still applies); its scratch directory and proxy go when it ends.
   */
  async start(params: ScriptSessionParams): Promise<ScriptSession> {
    checkScriptParams(params);
    const logs: string[] = [];
    const { host, plan } = await this.prepareScript(params, logs, params.args ?? []);
    const sandbox = await this.enterSandbox(host, { ...plan, logs });
    let session: ProcessSession;
    try {
      session = startProcessSession({ ...sandbox.invocation, maxStderrBytes: this.policy.maxStderrBytes });
    } catch (error) {
      await sandbox.release();
      throw error;
    }
    // The cgroup lives as long as the session; it goes with the rest of the sandbox when it ends.
    const watch = sandbox.cgroup === undefined ? undefined : watchMemory(sandbox.cgroup);
    const exited = session.exited
      .then(async (exit): Promise<ScriptSessionExit> => {
        const exceeded = (await watch?.stop()) === true;
        return exceeded ? { ...exit, memoryLimitExceeded: true } : exit;
      })
      .finally(() => sandbox.release());
    return {
      stdin: session.stdin,
      stdout: session.stdout,
      logs,
      stderr: session.stderr,
      exited,
      stop: () => {
        void session.stop();
        return exited;
      },
    };
  }

  /** Everything of a script's sandboxed command but its input and bounds: the checks, grants and argv. */
  private async prepareScript(
    params: ScriptExecutionParams | ScriptSessionParams,
    logs: string[],
    args: readonly string[],
  ): Promise<{
    host: HostReport;
    plan: Omit<SandboxedRun, 'stdin' | 'timeoutMs' | 'maxStdoutBytes' | 'logs'>;
  }> {
    const { language } = params;
    const host = await this.host();
    if (host.isolationUnavailable !== undefined) {
      if (this.policy.requireIsolation) throw new SecurityError(host.isolationUnavailable);
      logs.push(`${host.isolationUnavailable}; running without network and filesystem isolation`);
    }
    if (host.limitsUnavailable !== undefined) logs.push(host.limitsUnavailable);

    const script = await jailScriptPath(this.policy.baseDir, params.scriptPath);
    const interpreter = host.interpreters[language];
    if (interpreter === undefined) {
      throw new DependencyError(host.interpreters.unavailable[language] ?? `no interpreter for ${language}`);
    }
    const sandboxUser = host.sandbox.root ? this.policy.sandboxUser : undefined;
    if (!(await isReachableBy(script.path, sandboxUser, 'read'))) {
      throw new SecurityError(`the script "${params.scriptPath}" is not readable by the sandbox user`);
    }
    const grants = await grantAccess(this.policy, script, params.securityContext);
    logs.push(...grants.logs);
    const environment = await this.dependencies(host).prepare(language, script.dir, interpreter);
    if (environment !== undefined) logs.push(environment.log);

    const command = environment?.interpreter ?? interpreter.command;
    const entryPoint = 'entryPoint' in params ? params.entryPoint : undefined;
    const argv =
      entryPoint !== undefined
        ? [command, ...entryPointArgs(language, script.path, entryPoint)]
        : language === 'bun'
          ? [command, 'run', script.path, ...args]
          : [command, script.path, ...args];
    const plan = {
      argv,
      cwd: script.dir,
      scriptDir: script.dir,
      ...(environment?.overlayLayer === undefined
        ? {}
        : { overlay: { lowerDirs: [environment.overlayLayer, script.dir] } }),
      runtimePaths: [...interpreter.runtimePaths, ...(environment?.runtimePaths ?? [])],
      readablePaths: grants.readablePaths,
      writablePaths: grants.writablePaths,
      network:
        grants.networkHosts === undefined
          ? undefined
          : egressDecision(this.policy.allowNetworkHosts, grants.networkHosts),
      limits: this.scriptLimits(language),
      cgroupLimits: this.runCgroupLimits(),
      home: 'tmpfs' as const,
      declaredEnv: params.env,
    };
    return { host, plan };
  }

  private encodeInput(inputData: Record<string, unknown> | undefined): Buffer {
    let text: string | undefined;
    try {
      text = JSON.stringify(inputData ?? {});
    } catch (error) {
      throw new InputError('the input data cannot be encoded as JSON', { cause: error });
    }
    if (typeof text !== 'string') throw new InputError('the input data cannot be encoded as JSON');
    const bytes = Buffer.from(text, 'utf8');
    if (bytes.length > this.policy.maxInputBytes) {
      throw new InputError(
        `the input data is ${bytes.length} bytes; the limit is ${this.policy.maxInputBytes}`,
        {
          tooLarge: true,
        },
      );
    }
    return bytes;
  }

  private scriptLimits(language: ScriptLanguage): ProcessLimits {
    const { cpuSeconds, memoryBytes, maxProcesses, maxFileSizeBytes } = this.policy.limits;
    const kind = language === 'python' ? 'address-space' : 'data';
    return { cpuSeconds, memory: { kind, bytes: memoryBytes }, maxProcesses, maxFileSizeBytes };
  }

  private runCgroupLimits(): RunCgroupLimits {
    const { runMemoryBytes, maxProcesses, cpuWeight } = this.policy.limits;
    return { memoryBytes: runMemoryBytes, maxTasks: maxProcesses + HELPER_TASKS, cpuWeight };
  }

  private dependencies(host: HostReport): DependencyEnvironments {
    this.environments ??= new DependencyEnvironments({
      cacheDir: this.policy.cacheDir,
      owner: host.sandbox.root ? this.policy.sandboxUser : undefined,
      namespaces: host.sandbox.namespaces,
      network: this.policy.allowDependencyNetwork,
      runStep: (step) => this.runBuildStep(host, step),
    });
    return this.environments;
  }

  private runBuildStep(host: HostReport, step: BuildStep): Promise<StepOutcome> {
    const { maxProcesses, maxFileSizeBytes } = this.policy.limits;
    const interpreters = [host.interpreters.python, host.interpreters.nodejs, host.interpreters.bun];
    return this.runSandboxed(host, {
      argv: step.argv,
      cwd: step.cwd,
      scriptDir: step.cwd,
      ...(step.overlay === undefined
        ? {}
        : {
            overlay: {
              lowerDirs: step.overlay.lowerDirs,
              ...(step.overlay.upper ? { upper: step.overlay.upper } : {}),
            },
          }),
      runtimePaths: interpreters.flatMap((interpreter) => interpreter?.runtimePaths ?? []),
      readablePaths: [],
      writablePaths: step.writablePaths,
      // Installs reach public hosts (a registry) only, and only when the policy allows it.
      network: step.network ? () => ({ allowed: true, publicOnly: true }) : undefined,
      // Installers need more CPU and memory than scripts get; the build's time limit bounds them.
      limits: { maxProcesses, maxFileSizeBytes },
      // Installers keep caches in HOME: the host scratch directory, not the runs' small tmpfs.
      home: 'host',
      declaredEnv: undefined,
      stdin: Buffer.alloc(0),
      timeoutMs: this.policy.dependencyTimeoutMs,
      maxStdoutBytes: BUILD_OUTPUT_BYTES,
      logs: [],
    });
  }

  private async runSandboxed(host: HostReport, run: SandboxedRun): Promise<StepOutcome> {
    const sandbox = await this.enterSandbox(host, run);
    const watch = sandbox.cgroup === undefined ? undefined : watchMemory(sandbox.cgroup);
    try {
      const outcome = await runProcess({
        ...sandbox.invocation,
        stdin: run.stdin,
        timeoutMs: run.timeoutMs,
        maxStdoutBytes: run.maxStdoutBytes,
        maxStderrBytes: this.policy.maxStderrBytes,
        ...(run.onSpawn === undefined ? {} : { onSpawn: run.onSpawn }),
      });
      const memoryLimitExceeded = (await watch?.stop()) === true;
      return {
        outcome,
        exit: sandboxExit(outcome, sandbox.namespaces),
        ...(memoryLimitExceeded ? { memoryLimitExceeded } : {}),
      };
    } finally {
      await watch?.stop();
      await sandbox.release();
    }
  }

  /** The run's scratch, root plan and proxy, and the command that starts it in them; `release` removes them. */
  private async enterSandbox(
    host: HostReport,
    run: Omit<SandboxedRun, 'stdin' | 'timeoutMs' | 'maxStdoutBytes'>,
  ): Promise<{
    invocation: Invocation;
    namespaces: boolean;
    cgroup: RunCgroup | undefined;
    release(): Promise<void>;
  }> {
    const sandboxUser = host.sandbox.root ? this.policy.sandboxUser : undefined;
    const namespaces = host.sandbox.namespaces;
    // Without namespaces there is no relay into the run and nothing to filter: the script shares the
    // host's network (the logs already say the run is not isolated).
    const network = namespaces ? run.network : undefined;
    if (network !== undefined && host.networkUnavailable !== undefined) {
      throw new SecurityError(host.networkUnavailable);
    }
    const env = (home: string) =>
      scriptEnvironment({
        hostEnv: this.policy.hostEnv,
        allowList: this.policy.envAllowList,
        declared: run.declaredEnv,
        home,
        ...(network === undefined ? {} : { runnerVariables: proxyVariables(PROXY_PORT) }),
      });
    // Validate the variables before creating anything.
    env(SANDBOX_HOME);
    const scratch = await createScratch(this.policy.cacheDir, sandboxUser);
    let proxy: EgressProxy | undefined;
    let cgroup: RunCgroup | undefined;
    const release = async () => {
      try {
        // Everything still in the run's cgroup is killed before it is removed.
        await cgroup?.remove();
      } finally {
        await proxy?.close();
        await scratch.remove();
      }
    };
    try {
      if (!namespaces && !(await isReachableBy(scratch.home, sandboxUser, 'execute'))) {
        throw new SecurityError(
          `the cache directory ${this.policy.cacheDir} is not reachable by the sandbox user`,
        );
      }
      let root;
      if (namespaces) {
        const home: RootRequest['home'] =
          run.home === 'tmpfs' ? { tmpfsBytes: this.policy.limits.scratchBytes } : { hostDir: scratch.home };
        const entries = await planRoot({
          scriptDir: run.scriptDir,
          ...(run.overlay === undefined ? {} : { overlay: run.overlay }),
          runtimePaths: [...run.runtimePaths, ...host.toolRuntimePaths, ...(await this.policyRuntimePaths())],
          readablePaths: run.readablePaths,
          writablePaths: run.writablePaths,
          home,
          user: sandboxUser,
          ...(network === undefined ? {} : { proxySocket: scratch.proxySocket }),
        });
        if (host.cgroups !== undefined && run.cgroupLimits !== undefined) {
          cgroup = await this.createCgroup(host.cgroups, run.cgroupLimits);
        }
        root = {
          dir: scratch.root,
          entries,
          proxy: network !== undefined,
          ...(cgroup === undefined ? {} : { cgroupProcs: cgroup.procsFiles }),
        };
        if (network !== undefined) proxy = await this.startProxy(scratch.proxySocket, network, run.logs);
      }
      const invocation = buildInvocation(host.sandbox, {
        argv: run.argv,
        cwd: run.cwd,
        limits: run.limits,
        env: env(namespaces ? SANDBOX_HOME : scratch.home),
        ...(root === undefined ? {} : { root }),
      });
      return { invocation, namespaces, cgroup, release };
    } catch (error) {
      await release();
      throw error;
    }
  }

  private async createCgroup(
    cgroups: NonNullable<HostReport['cgroups']>,
    limits: RunCgroupLimits,
  ): Promise<RunCgroup> {
    try {
      return await cgroups.create(limits);
    } catch (error) {
      throw new SecurityError(`the run's cgroup cannot be created (${cgroups.description})`, {
        cause: error,
        details: (error as Error).message,
      });
    }
  }

  private async startProxy(
    socketPath: string,
    decide: (host: string) => EgressDecision,
    logs: string[],
  ): Promise<EgressProxy> {
    try {
      return await startEgressProxy({ socketPath, decide, logs });
    } catch (error) {
      throw new SecurityError(
        `the run's network proxy cannot listen on ${socketPath} (a unix socket path must stay under 108 bytes: use a shorter cacheDir)`,
        { cause: error },
      );
    }
  }

  /** The policy's extra runtime paths that exist, as real paths. */
  private async policyRuntimePaths(): Promise<string[]> {
    const paths: string[] = [];
    for (const path of this.policy.runtimePaths) {
      try {
        paths.push(await realpath(path));
      } catch {
        // Absent on this host: nothing to show.
      }
    }
    return paths;
  }

  private interpret(
    outcome: ProcessOutcome,
    exit: SandboxExit,
    timeoutMs: number,
    memoryLimitExceeded: boolean,
  ): Record<string, unknown> {
    const stderr = describeStderr(outcome);
    if (outcome.spawnError !== undefined) {
      throw new ScriptError(`the script could not be started: ${outcome.spawnError.message}`, {
        cause: outcome.spawnError,
      });
    }
    if (memoryLimitExceeded) {
      throw new ScriptError(
        `the run's processes together used more than its memory limit of ${mebibytes(this.policy.limits.runMemoryBytes)} (its cgroup, scratch files and shared memory included): the kernel's OOM killer acted and every process of the run was killed`,
        { details: stderr },
      );
    }
    if (outcome.timedOut) {
      throw new TimeoutError(
        `the script ran longer than ${timeoutMs} ms and was stopped with every process it started`,
        {
          details: stderr,
        },
      );
    }
    if (outcome.stdoutOverflow) {
      throw new ScriptError(
        `the script wrote more than ${this.policy.maxOutputBytes} bytes to stdout: the output limit was hit, reading stopped and the script was killed`,
        { details: stderr },
      );
    }
    if (exit.kind === 'setup-error') throw new SecurityError(exit.message, { details: stderr });
    if (exit.kind === 'unreported') {
      throw new ScriptError('the sandbox ended without reporting how the script ended', {
        details: stderr,
        exit: { exitCode: outcome.exitCode, signal: outcome.signal },
      });
    }
    if (exit.exitCode !== 0 || exit.signal !== null) {
      const message = NO_SPACE.test(stderr)
        ? `${describeExit(exit)}: a file system it wrote to is full (No space left on device); its scratch space (HOME and TMPDIR) holds at most ${mebibytes(this.policy.limits.scratchBytes)} per run`
        : describeExit(exit);
      throw new ScriptError(message, { details: [describeExit(exit), stderr].join('\n'), exit });
    }
    if (this.policy.stderrIsError && stderr !== '') {
      throw new ScriptError('the script wrote to stderr, which counts as a failure even with exit code 0', {
        details: stderr,
        exit,
      });
    }
    return parseOutput(outcome.stdout, stderr);
  }
}

function parseOutput(stdout: Buffer, stderr: string): Record<string, unknown> {
  const text = stdout.toString('utf8').trim();
  if (text === '')
    throw new ScriptError('the script printed nothing; it must print one JSON object', { details: stderr });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ScriptError(`the script output is not JSON (${reason})`, {
      details: `stdout: ${excerpt(text)}\n${stderr}`.trim(),
    });
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new ScriptError('the script output must be one JSON object', {
      details: `stdout: ${excerpt(text)}`,
    });
  }
  return parsed as Record<string, unknown>;
}

/** How Python, Node and the C library put ENOSPC. */
const NO_SPACE = /No space left on device|ENOSPC/;

function mebibytes(bytes: number): string {
  return `${Math.round((bytes / MIB) * 10) / 10} MiB`;
}

const SIGNAL_HINTS: Readonly<Record<string, string>> = {
  SIGXCPU: ' (CPU time limit reached)',
  SIGXFSZ: ' (file size limit reached)',
  SIGKILL: ' (killed; possibly the memory limit)',
};

function describeExit(exit: ExitStatus): string {
  if (exit.signal !== null)
    return `the script was killed by ${exit.signal}${SIGNAL_HINTS[exit.signal] ?? ''}`;
  return `the script exited with code ${exit.exitCode}`;
}

function describeStderr(outcome: ProcessOutcome): string {
  const text = outcome.stderr.trim();
  if (outcome.stderrDropped === 0) return text;
  return `${text}\n… (${outcome.stderrDropped} more bytes of stderr dropped)`;
}

function excerpt(text: string): string {
  return text.length <= EXCERPT_CHARS ? text : `${text.slice(0, EXCERPT_CHARS)}…`;
}

function toExecutionError(error: ScriptRunnerError): ScriptExecutionError {
  return {
    type: error.type,
    message: error.message,
    ...(error.details === undefined || error.details === '' ? {} : { details: error.details }),
    code: error.code,
    retryable: error.retryable,
    ...(error.exit === undefined ? {} : { exitCode: error.exit.exitCode, signal: error.exit.signal }),
  };
}
