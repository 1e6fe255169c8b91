/**
 * What a tool asked for (`securityContext`) against what the global policy allows. The tool's
 * declaration is a request; only the part the policy also allows is granted, and every refusal is
 * explained in the run's logs.
 *
 * Write paths: `allowWrite` entries are directories or files, relative to the script's directory or
 * absolute; a trailing `/**` or `/*` means the directory itself (the mount grants a whole tree). They
 * must exist and, after resolving symlinks, lie inside one of the policy's `allowWritePaths`.
 *
 * Network: the sandbox can only switch the network off or on, so it is switched on only when the tool
 * asks for hosts and the policy allows every one of them; which hosts are then reached is not filtered.
 */
import { realpath } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { ToolJsonSecurityContext } from '@agentmesh/protocol';
import { isInside } from './path-jail.js';
import type { ResolvedPolicy } from './policy.js';

export interface Grants {
  readonly writablePaths: readonly string[];
  readonly network: boolean;
  readonly logs: readonly string[];
}

const GLOB_SUFFIX = /\/\*\*?$/;
const GLOB_CHARS = /[*?[\]{}]/;

export async function grantAccess(
  policy: ResolvedPolicy,
  scriptDir: string,
  context: ToolJsonSecurityContext | undefined,
): Promise<Grants> {
  const logs: string[] = [];
  const writablePaths = await grantWrites(policy, scriptDir, context?.fileAccess?.allowWrite ?? [], logs);
  const network = grantNetwork(policy, context?.networkAccess?.allowHosts ?? [], logs);
  return { writablePaths, network, logs };
}

async function grantWrites(
  policy: ResolvedPolicy,
  scriptDir: string,
  requested: readonly string[],
  logs: string[],
): Promise<string[]> {
  const roots: string[] = [];
  for (const root of policy.allowWritePaths) {
    try {
      roots.push(await realpath(root));
    } catch {
      // A policy directory that does not exist grants nothing.
    }
  }
  const granted: string[] = [];
  for (const entry of requested) {
    const path = entry.replace(GLOB_SUFFIX, '') || '.';
    if (GLOB_CHARS.test(path) || path.includes('\0')) {
      logs.push(
        `write access to "${entry}" refused: only plain paths (optionally ending in /**) are supported`,
      );
      continue;
    }
    let real: string;
    try {
      real = await realpath(isAbsolute(path) ? path : resolve(scriptDir, path));
    } catch {
      logs.push(`write access to "${entry}" refused: the path does not exist`);
      continue;
    }
    if (!roots.some((root) => isInside(root, real))) {
      logs.push(`write access to "${entry}" refused by the global policy`);
      continue;
    }
    if (!granted.includes(real)) granted.push(real);
  }
  return granted;
}

function grantNetwork(policy: ResolvedPolicy, requested: readonly string[], logs: string[]): boolean {
  if (requested.length === 0) return false;
  const refused = requested.filter(
    (host) => !policy.allowNetworkHosts.some((rule) => hostMatches(rule, host)),
  );
  if (refused.length > 0) {
    logs.push(`network access refused by the global policy for ${refused.join(', ')}: the network stays off`);
    return false;
  }
  logs.push(`network access granted for ${requested.join(', ')} (hosts are not filtered individually)`);
  return true;
}

/** `*` matches anything, `*.example.com` any subdomain (and a tool's identical wildcard); else exact. */
export function hostMatches(rule: string, host: string): boolean {
  const ruleLower = rule.toLowerCase();
  const hostLower = host.toLowerCase();
  if (ruleLower === '*' || ruleLower === hostLower) return true;
  return ruleLower.startsWith('*.') && hostLower.endsWith(ruleLower.slice(1));
}
