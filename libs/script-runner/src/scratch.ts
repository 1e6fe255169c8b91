/**
 * Per-process scratch directories under the cache directory: the script's HOME and TMPDIR, owned by
 * the sandbox user so the script can write there (and only there, unless granted more), removed after
 * the run.
 */
import { randomUUID } from 'node:crypto';
import { chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxUser } from './policy.js';

export interface Scratch {
  readonly dir: string;
  remove(): Promise<void>;
}

export async function createScratch(cacheDir: string, owner: SandboxUser | undefined): Promise<Scratch> {
  const root = join(cacheDir, 'scratch');
  await mkdir(root, { recursive: true, mode: 0o755 });
  const dir = join(root, randomUUID());
  await mkdir(dir, { mode: 0o700 });
  if (owner !== undefined) await chown(dir, owner.uid, owner.gid);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** Gives a directory tree we created to the sandbox user (so a sandboxed build can write into it). */
export async function chownTree(paths: readonly string[], owner: SandboxUser | undefined): Promise<void> {
  if (owner === undefined) return;
  for (const path of paths) await chown(path, owner.uid, owner.gid);
}
