/**
 * Finds out once what this host offers the sandbox: the util-linux tools, whether the namespace sandbox
 * can actually be created (by building a real root once, with nothing to run in it), whether runs can
 * get a cgroup of their own (by creating one and letting the helper enter it), and which interpreters the
 * sandbox user can run.
 */
import { realpath } from 'node:fs/promises';
import { openCgroupHost, type CgroupHost } from './cgroups.js';
import { findOnPath } from './executables.js';
import { detectInterpreters, type Interpreters } from './interpreters.js';
import type { ResolvedPolicy } from './policy.js';
import { runProcess } from './process-run.js';
import { probeInvocation, sandboxExit, type SandboxHost, type SandboxTools } from './sandbox.js';
import { isSystemPath, planRoot } from './sandbox-root.js';
import { createScratch } from './scratch.js';

export interface HostReport {
  readonly sandbox: SandboxHost;
  /** Why the namespace sandbox is not used; absent when it is. */
  readonly isolationUnavailable?: string;
  /** Per-run cgroups; absent when runs get only rlimits (`cgroupsUnavailable` says why). */
  readonly cgroups?: CgroupHost;
  readonly cgroupsUnavailable?: string;
  /** Absent when prlimit was found. */
  readonly limitsUnavailable?: string;
  /** Why network cannot be granted (through the proxy relay); absent when it can. */
  readonly networkUnavailable?: string;
  readonly interpreters: Interpreters;
  /** Tools run inside the sandbox's root that live outside the system directories (real paths). */
  readonly toolRuntimePaths: readonly string[];
}

const PROBE_TIMEOUT_MS = 15_000;
/** Roomy enough for the helper alone, whatever the policy's run limits are. */
const PROBE_CGROUP_LIMITS = { memoryBytes: 512 * 1024 * 1024, maxTasks: 64, cpuWeight: 100 };
/** Administration tools are often not on an unprivileged PATH. */
const SYSTEM_TOOL_DIRS = '/usr/sbin:/sbin:/usr/bin:/bin';

export async function probeHost(policy: ResolvedPolicy, ownNode: string): Promise<HostReport> {
  const path = [policy.hostEnv['PATH'], SYSTEM_TOOL_DIRS].filter(Boolean).join(':');
  const find = async (name: string) => {
    const found = await findOnPath(name, path);
    return found === undefined ? undefined : realpath(found);
  };
  const [unshare, mount, umount, pivotRoot, setpriv, prlimit, ip, env] = await Promise.all(
    ['unshare', 'mount', 'umount', 'pivot_root', 'setpriv', 'prlimit', 'ip', 'env'].map(find),
  );
  const root = process.getuid?.() === 0;
  const tools: SandboxTools = {
    unshare,
    mount,
    umount,
    pivotRoot,
    setpriv,
    prlimit,
    ip,
    env,
    helperNode: ownNode,
  };
  // Run inside the new root (after the pivot): they must be visible there.
  const toolRuntimePaths = [setpriv, prlimit, env, mount, umount].filter(
    (tool): tool is string => tool !== undefined && !isSystemPath(tool),
  );
  const candidate: SandboxHost = { tools, root, user: policy.sandboxUser, namespaces: true };
  const isolationUnavailable = await whyNoNamespaces(candidate, policy, toolRuntimePaths);
  const sandbox = { ...candidate, namespaces: isolationUnavailable === undefined };
  const cgroups =
    isolationUnavailable === undefined
      ? await cgroupsFor(sandbox, policy, toolRuntimePaths)
      : { unavailable: 'cgroups are entered by the namespace sandbox, which is not available' };
  const interpreters = await detectInterpreters(policy, root ? policy.sandboxUser : undefined, ownNode);
  return {
    sandbox,
    ...(isolationUnavailable === undefined ? {} : { isolationUnavailable }),
    ...('host' in cgroups ? { cgroups: cgroups.host } : { cgroupsUnavailable: cgroups.unavailable }),
    ...(prlimit === undefined
      ? {
          limitsUnavailable:
            'prlimit (util-linux) was not found: CPU, memory, process and file-size limits are not applied',
        }
      : {}),
    ...(ip === undefined
      ? {
          networkUnavailable:
            "ip (iproute2) was not found: the sandbox's loopback for the network proxy cannot be brought up, so no tool is granted network",
        }
      : {}),
    interpreters,
    toolRuntimePaths,
  };
}

async function cgroupsFor(
  host: SandboxHost,
  policy: ResolvedPolicy,
  toolRuntimePaths: readonly string[],
): Promise<{ host: CgroupHost } | { unavailable: string }> {
  const opened = await openCgroupHost();
  if (!('host' in opened)) return opened;
  let cgroup;
  try {
    cgroup = await opened.host.create(PROBE_CGROUP_LIMITS);
  } catch (error) {
    return {
      unavailable: `a run's cgroup cannot be created (${opened.host.description}): ${(error as Error).message}`,
    };
  }
  try {
    const failure = await probeSandbox(host, policy, toolRuntimePaths, cgroup.procsFiles);
    return failure === undefined
      ? opened
      : { unavailable: `the sandbox cannot enter a cgroup of its own: ${failure}` };
  } finally {
    await cgroup.remove();
  }
}

async function whyNoNamespaces(
  host: SandboxHost,
  policy: ResolvedPolicy,
  toolRuntimePaths: readonly string[],
): Promise<string | undefined> {
  const required: (keyof SandboxTools)[] = ['unshare', 'mount', 'umount', 'pivotRoot', 'setpriv'];
  if (!host.root) required.push('env');
  const missing = required.filter((tool) => host.tools[tool] === undefined);
  if (missing.length > 0) {
    return `${missing.map((tool) => (tool === 'pivotRoot' ? 'pivot_root' : tool)).join(', ')} not found`;
  }
  const failure = await probeSandbox(host, policy, toolRuntimePaths, undefined);
  return failure === undefined ? undefined : `the namespace sandbox cannot be created here: ${failure}`;
}

/** Builds a real root once (entering `cgroupProcs` first when given); why that failed, if it did. */
async function probeSandbox(
  host: SandboxHost,
  policy: ResolvedPolicy,
  toolRuntimePaths: readonly string[],
  cgroupProcs: readonly string[] | undefined,
): Promise<string | undefined> {
  let scratch;
  try {
    scratch = await createScratch(policy.cacheDir, host.root ? policy.sandboxUser : undefined);
  } catch (error) {
    return `the cache directory ${policy.cacheDir} cannot hold scratch directories: ${(error as Error).message}`;
  }
  try {
    const entries = await planRoot({
      runtimePaths: toolRuntimePaths,
      readablePaths: [],
      writablePaths: [],
      home: { tmpfsBytes: policy.limits.scratchBytes },
      user: host.root ? policy.sandboxUser : undefined,
    });
    const invocation = probeInvocation(host, {
      dir: scratch.root,
      entries,
      proxy: false,
      ...(cgroupProcs === undefined ? {} : { cgroupProcs }),
    });
    const outcome = await runProcess({
      ...invocation,
      stdin: Buffer.alloc(0),
      timeoutMs: PROBE_TIMEOUT_MS,
      maxStdoutBytes: 4096,
      maxStderrBytes: 4096,
    });
    if (outcome.spawnError !== undefined)
      return `unshare could not be started: ${outcome.spawnError.message}`;
    const exit = sandboxExit(outcome, true);
    if (exit.kind === 'exit' && exit.exitCode === 0) return undefined;
    const detail =
      exit.kind === 'setup-error' ? exit.message : outcome.stderr.trim() || `exit code ${outcome.exitCode}`;
    return detail.replace(/\s+/g, ' ').slice(0, 500);
  } finally {
    await scratch.remove();
  }
}
