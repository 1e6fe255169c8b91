/**
 * What a tool asked for (`securityContext`) against what the global policy allows. The tool's
 * declaration is a request; only the part the policy also allows is granted, and every refusal is
 * explained in the run's logs.
 *
 * Paths: `allowRead` and `allowWrite` entries are files or directories, relative to the script's
 * directory or absolute; a trailing `/**` or `/*` means the directory itself (the mount grants a whole
 * tree) and `self` the script. They must exist. The script's own directory is always readable, so read
 * grants inside it change nothing; outside it, a read must lie in the policy's `allowReadPaths` or
 * `allowWritePaths`, a write in `allowWritePaths` (after resolving symlinks). Paths the sandbox builds
 * itself (/etc, /dev, /proc, the scratch home) and the cache directory (other runs' files) are never
 * granted.
 *
 * Network: the tool's `allowHosts` entries the policy allows are granted, and the run's proxy lets a
 * connection through only to a host that matches a granted entry and a policy rule (`egressDecision`).
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { ToolJsonSecurityContext } from '@agentmesh/protocol';
import { isInside } from './path-jail.js';
import type { ResolvedPolicy } from './policy.js';
import { conflictsWithSandboxLayout } from './sandbox-root.js';

export interface Grants {
  /** Real paths outside the script's directory the script may read. */
  readonly readablePaths: readonly string[];
  readonly writablePaths: readonly string[];
  /** The tool's `allowHosts` entries the policy allows; absent: no network at all. */
  readonly networkHosts: readonly string[] | undefined;
  readonly logs: readonly string[];
}

export interface ScriptLocation {
  readonly path: string;
  readonly dir: string;
}

const GLOB_SUFFIX = /\/\*\*?$/;
const GLOB_CHARS = /[*?[\]{}]/;
/** `*`, `*.domain`, a name, or an IPv4/IPv6 address (optionally in brackets). */
const HOST_ENTRY = /^(\*|(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)*\.?|\[?[0-9a-f:.]+\]?)$/i;

export async function grantAccess(
  policy: ResolvedPolicy,
  script: ScriptLocation,
  context: ToolJsonSecurityContext | undefined,
): Promise<Grants> {
  const logs: string[] = [];
  const writeRoots = await realRoots(policy.allowWritePaths);
  const readRoots = [...(await realRoots(policy.allowReadPaths)), ...writeRoots];
  const cacheDir = await realpath(policy.cacheDir).catch(() => resolve(policy.cacheDir));
  const grant = (access: 'read' | 'write', roots: readonly string[], requested: readonly string[]) =>
    grantPaths({ access, roots, requested, script, cacheDir, logs });
  const readablePaths = await grant('read', readRoots, context?.fileAccess?.allowRead ?? []);
  const writablePaths = await grant('write', writeRoots, context?.fileAccess?.allowWrite ?? []);
  const networkHosts = grantNetwork(policy, context?.networkAccess?.allowHosts ?? [], logs);
  return { readablePaths, writablePaths, networkHosts, logs };
}

async function realRoots(paths: readonly string[]): Promise<string[]> {
  const roots: string[] = [];
  for (const root of paths) {
    try {
      roots.push(await realpath(root));
    } catch {
      // A policy directory that does not exist grants nothing.
    }
  }
  return roots;
}

async function grantPaths(request: {
  readonly access: 'read' | 'write';
  readonly roots: readonly string[];
  readonly requested: readonly string[];
  readonly script: ScriptLocation;
  readonly cacheDir: string;
  readonly logs: string[];
}): Promise<string[]> {
  const { access, roots, script, cacheDir, logs } = request;
  const granted: string[] = [];
  for (const entry of request.requested) {
    const refuse = (why: string) => logs.push(`${access} access to "${entry}" refused: ${why}`);
    const path = entry === 'self' ? script.path : entry.replace(GLOB_SUFFIX, '') || '.';
    if (GLOB_CHARS.test(path) || path.includes('\0')) {
      refuse('only plain paths (optionally ending in /**) are supported');
      continue;
    }
    let real: string;
    try {
      real = await realpath(isAbsolute(path) ? path : resolve(script.dir, path));
    } catch {
      refuse('the path does not exist');
      continue;
    }
    // The script's directory is visible (read-only) anyway.
    if (access === 'read' && isInside(script.dir, real)) continue;
    const layout = conflictsWithSandboxLayout(real);
    if (layout !== undefined) {
      refuse(layout);
      continue;
    }
    if (isInside(cacheDir, real) || isInside(real, cacheDir)) {
      refuse("the runner's cache directory holds other runs' files");
      continue;
    }
    if (!roots.some((root) => isInside(root, real))) {
      logs.push(`${access} access to "${entry}" refused by the global policy`);
      continue;
    }
    if (!granted.includes(real)) granted.push(real);
  }
  return granted;
}

function grantNetwork(
  policy: ResolvedPolicy,
  requested: readonly string[],
  logs: string[],
): string[] | undefined {
  if (requested.length === 0) return undefined;
  const malformed = requested.filter((host) => !HOST_ENTRY.test(host));
  if (malformed.length > 0) {
    logs.push(`network access refused for ${malformed.join(', ')}: not a host name, address or *.domain`);
  }
  const wellFormed = requested.filter((host) => HOST_ENTRY.test(host));
  const allowed = wellFormed.filter((host) =>
    policy.allowNetworkHosts.some((rule) => hostMatches(rule, host)),
  );
  const refused = wellFormed.filter((host) => !allowed.includes(host));
  if (refused.length > 0) {
    logs.push(
      `network access refused by the global policy for ${refused.join(', ')}${allowed.length === 0 ? ': the network stays off' : ''}`,
    );
  }
  if (allowed.length === 0) return undefined;
  logs.push(
    `network access granted for ${allowed.join(', ')} through the run's filtering proxy (HTTP_PROXY/HTTPS_PROXY); every other host is refused`,
  );
  return allowed;
}

/** `*` matches anything, `*.example.com` any subdomain (and a tool's identical wildcard); else exact. */
export function hostMatches(rule: string, host: string): boolean {
  const ruleLower = normaliseHost(rule);
  const hostLower = normaliseHost(host);
  if (ruleLower === '*' || ruleLower === hostLower) return true;
  return ruleLower.startsWith('*.') && hostLower.endsWith(ruleLower.slice(1));
}

function normaliseHost(host: string): string {
  return host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '');
}

export type EgressDecision =
  | {
      readonly allowed: true;
      /** Only public addresses may be reached (the host matched only through a `*` rule). */
      readonly publicOnly: boolean;
    }
  | { readonly allowed: false; readonly reason: string };

/**
 * Whether the run's proxy may connect to `host`: it must match one of the tool's granted entries and
 * one of the policy's rules. Matching only the policy's `*` reaches public addresses only: loopback,
 * private and link-local ones (the executor's own services) must be named by the policy.
 */
export function egressDecision(
  policyRules: readonly string[],
  toolHosts: readonly string[],
): (host: string) => EgressDecision {
  return (host) => {
    if (!toolHosts.some((entry) => hostMatches(entry, host))) {
      return { allowed: false, reason: "not in the tool's networkAccess.allowHosts" };
    }
    const rules = policyRules.filter((rule) => hostMatches(rule, host));
    if (rules.length === 0) return { allowed: false, reason: 'not allowed by the global policy' };
    return { allowed: true, publicOnly: rules.every((rule) => rule === '*') };
  };
}
