/**
 * Finds out once what this host offers the sandbox: the util-linux tools, whether the namespace sandbox
 * can actually be created (by trying it), and which interpreters the sandbox user can run.
 */
import { findOnPath } from './executables.js';
import { detectInterpreters, type Interpreters } from './interpreters.js';
import type { ResolvedPolicy } from './policy.js';
import { runProcess } from './process-run.js';
import { probeInvocation, sandboxExit, type SandboxHost } from './sandbox.js';

export interface HostReport {
  readonly sandbox: SandboxHost;
  /** Why the namespace sandbox is not used; absent when it is. */
  readonly isolationUnavailable?: string;
  /** Absent when prlimit was found. */
  readonly limitsUnavailable?: string;
  readonly interpreters: Interpreters;
}

const PROBE_TIMEOUT_MS = 15_000;

export async function probeHost(policy: ResolvedPolicy, ownNode: string): Promise<HostReport> {
  const path = policy.hostEnv['PATH'];
  const [unshare, mount, setpriv, prlimit] = await Promise.all(
    ['unshare', 'mount', 'setpriv', 'prlimit'].map((name) => findOnPath(name, path)),
  );
  const root = process.getuid?.() === 0;
  const tools = { unshare, mount, setpriv, prlimit, helperNode: ownNode };
  const candidate: SandboxHost = { tools, root, user: policy.sandboxUser, namespaces: true };
  const isolationUnavailable = await whyNoNamespaces(candidate);
  const sandbox = { ...candidate, namespaces: isolationUnavailable === undefined };
  const interpreters = await detectInterpreters(policy, root ? policy.sandboxUser : undefined, ownNode);
  return {
    sandbox,
    ...(isolationUnavailable === undefined ? {} : { isolationUnavailable }),
    ...(prlimit === undefined
      ? {
          limitsUnavailable:
            'prlimit (util-linux) was not found: CPU, memory, process and file-size limits are not applied',
        }
      : {}),
    interpreters,
  };
}

async function whyNoNamespaces(host: SandboxHost): Promise<string | undefined> {
  const missing = (['unshare', 'mount', 'setpriv'] as const).filter((tool) => host.tools[tool] === undefined);
  if (missing.length > 0) return `${missing.join(', ')} (util-linux) not found`;
  const invocation = probeInvocation(host);
  const outcome = await runProcess({
    ...invocation,
    stdin: Buffer.alloc(0),
    timeoutMs: PROBE_TIMEOUT_MS,
    maxStdoutBytes: 4096,
    maxStderrBytes: 4096,
  });
  if (outcome.spawnError !== undefined) return `unshare could not be started: ${outcome.spawnError.message}`;
  const exit = sandboxExit(outcome, true);
  if (exit.kind === 'exit' && exit.exitCode === 0) return undefined;
  const detail =
    exit.kind === 'setup-error' ? exit.message : outcome.stderr.trim() || `exit code ${outcome.exitCode}`;
  const reason = detail.replace(/\s+/g, ' ').slice(0, 500);
  return `the namespace sandbox cannot be created here: ${reason}`;
}
