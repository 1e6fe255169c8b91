/**
 * Finding programs on the host: PATH lookup (from the environment the policy hands in) and whether a
 * file can be reached by the sandbox user, which matters because scripts run as that user and an
 * interpreter installed under a private home directory is invisible to it.
 */
import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import type { SandboxUser } from './policy.js';

/** Every executable named `name` on `pathVariable`, in PATH order, duplicates (same real file) removed. */
export async function findAllOnPath(name: string, pathVariable: string | undefined): Promise<string[]> {
  if (isAbsolute(name)) return (await isExecutableFile(name)) ? [name] : [];
  const found: string[] = [];
  const seen = new Set<string>();
  for (const dir of (pathVariable ?? '').split(delimiter)) {
    if (dir === '' || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    if (!(await isExecutableFile(candidate))) continue;
    const real = await realpath(candidate);
    if (seen.has(real)) continue;
    seen.add(real);
    found.push(candidate);
  }
  return found;
}

export async function findOnPath(
  name: string,
  pathVariable: string | undefined,
): Promise<string | undefined> {
  return (await findAllOnPath(name, pathVariable))[0];
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Whether `user` (no supplementary groups) can traverse every directory above `path` and has `need`
 * on the file itself, judged from mode bits (ACLs are not consulted). `undefined` user means the runner's
 * own identity, which we trust can.
 */
export async function isReachableBy(
  path: string,
  user: SandboxUser | undefined,
  need: 'read' | 'execute',
): Promise<boolean> {
  if (user === undefined) return true;
  let real: string;
  try {
    real = await realpath(path);
  } catch {
    return false;
  }
  const fileBits = need === 'read' ? 4 : 5;
  if (!(await permits(real, user, fileBits))) return false;
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    if (!(await permits(dir, user, 1))) return false;
    if (dir === dirname(dir)) return true;
  }
}

async function permits(path: string, user: SandboxUser, bits: number): Promise<boolean> {
  const info = await stat(path);
  const shift = info.uid === user.uid ? 6 : info.gid === user.gid ? 3 : 0;
  return ((info.mode >> shift) & bits) === bits;
}
