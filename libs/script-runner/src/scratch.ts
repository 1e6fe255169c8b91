/**
 * Per-run directories under the cache directory, removed after the run:
 *
 *     <cacheDir>/scratch/            0711 root: runs cannot list each other
 *       <random id>/                 0711 root
 *         home/                      0700 sandbox user: the script's HOME and TMPDIR
 *         root/                      0700 root: where the namespace helper mounts the run's new root
 *         proxy.sock                 0600 root: the run's filtering network proxy, when network is granted
 *
 * With namespaces a run sees only its own `home`, mounted at a fixed path; without them (the
 * `requireIsolation: false` fallback) the unlistable parents and random names are all that keeps runs
 * of the same uid apart.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxUser } from './policy.js';

export interface Scratch {
  /** The script's writable home on the host. */
  readonly home: string;
  /** Empty directory the sandbox's root is mounted on. */
  readonly root: string;
  /** Where the run's network proxy listens, if it gets one. */
  readonly proxySocket: string;
  remove(): Promise<void>;
}

export async function createScratch(cacheDir: string, owner: SandboxUser | undefined): Promise<Scratch> {
  const parent = join(cacheDir, 'scratch');
  await mkdir(parent, { recursive: true, mode: 0o711 });
  await chmod(parent, 0o711);
  // Short, so that the proxy socket's path stays within the 107 bytes a unix socket address allows.
  const dir = join(parent, randomBytes(8).toString('hex'));
  await mkdir(dir, { mode: 0o711 });
  await chmod(dir, 0o711);
  const home = join(dir, 'home');
  const root = join(dir, 'root');
  await mkdir(home, { mode: 0o700 });
  await mkdir(root, { mode: 0o700 });
  if (owner !== undefined) await chown(home, owner.uid, owner.gid);
  return {
    home,
    root,
    proxySocket: join(dir, 'proxy.sock'),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Gives a directory tree we created to the sandbox user (so a sandboxed build can write into it). */
export async function chownTree(paths: readonly string[], owner: SandboxUser | undefined): Promise<void> {
  if (owner === undefined) return;
  for (const path of paths) await chown(path, owner.uid, owner.gid);
}
