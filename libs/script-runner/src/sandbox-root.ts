/**
 * The file system a sandboxed run sees, as a plan for the namespace helper: a fresh, empty root filled
 * with exactly these entries, each at the same path as on the host (so script, interpreter and
 * environment paths need no translation), except the scratch home, which every run finds at
 * `SANDBOX_HOME`.
 *
 * - the system directories (/usr, /bin, /sbin, /lib*): read-only, or the same symlinks as on the host;
 * - /etc: only generated passwd, group and nsswitch.conf, plus ld.so.cache, alternatives and localtime;
 *   with network also hosts and the CA certificates;
 * - /dev: a small tmpfs with null, zero, full, random, urandom, the fd links and a small /dev/shm;
 * - /proc: a new proc of the run's pid namespace, other users' processes hidden;
 * - the runtime paths (interpreter installs outside the system directories, the policy's extras),
 *   the script's directory (or its dependency overlay) and the read grants: read-only;
 * - the write grants: read-write;
 * - the scratch home: a tmpfs of its own with a size limit (so one run cannot fill the host's disk; its
 *   pages count in the run's memory cgroup too), or, for builds, a host directory.
 *
 * Entries come out ordered so that a mount never hides one made before it.
 */
import { lstat, readlink, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isInside } from './path-jail.js';
import type { SandboxUser } from './policy.js';

/** The script's HOME and TMPDIR inside the sandbox. */
export const SANDBOX_HOME = '/home/sandbox';
/** Root-only directory inside the sandbox holding the proxy socket the helper relays to. */
export const CONTROL_DIR = '/run/agentmesh';
/** The port of the proxy relay on the sandbox's own loopback. */
export const PROXY_PORT = 3128;

const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'] as const;
const DEVICES = ['null', 'zero', 'full', 'random', 'urandom'] as const;
/** Read-only /etc entries every interpreter may need; none holds a secret. */
const ETC_ALWAYS = ['/etc/ld.so.cache', '/etc/alternatives'] as const;
/** Only with network: trust anchors for TLS. */
const ETC_NETWORK = [
  '/etc/ssl/certs',
  '/etc/ssl/cert.pem',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust/extracted',
] as const;
/** Paths the sandbox builds itself: a grant may be neither one of them nor above one. */
const BUILT_PATHS = ['/etc', '/dev', '/proc', SANDBOX_HOME, CONTROL_DIR] as const;
/** Nothing below these is ever granted. */
const UNGRANTABLE_TREES = ['/dev', '/proc', '/sys', SANDBOX_HOME, CONTROL_DIR] as const;

export type RootEntry =
  | {
      readonly kind: 'bind';
      readonly target: string;
      readonly source: string;
      readonly writable: boolean;
      /** The mount point is a file (created empty), not a directory. */
      readonly file: boolean;
      /** A device node: keeps device access, loses exec. */
      readonly device?: boolean;
    }
  | {
      readonly kind: 'overlay';
      readonly target: string;
      /** Top first. */
      readonly lowerDirs: readonly string[];
      readonly upperDir?: string;
      readonly workDir?: string;
    }
  | { readonly kind: 'tmpfs'; readonly target: string; readonly options: string }
  | { readonly kind: 'proc'; readonly target: string }
  | { readonly kind: 'dir'; readonly target: string; readonly mode: number }
  | { readonly kind: 'symlink'; readonly target: string; readonly link: string }
  | { readonly kind: 'file'; readonly target: string; readonly content: string; readonly mode: number };

export interface RootRequest {
  /** The script's directory, read-only; absent for the host probe. */
  readonly scriptDir?: string;
  /** Laid over the script's directory instead of a plain bind (dependency layers). */
  readonly overlay?: {
    readonly lowerDirs: readonly string[];
    readonly upper?: { readonly upperDir: string; readonly workDir: string };
  };
  /** Interpreter installs and other read-only paths the run needs (real paths). */
  readonly runtimePaths: readonly string[];
  readonly readablePaths: readonly string[];
  readonly writablePaths: readonly string[];
  /**
   * What is mounted at `SANDBOX_HOME`: a fresh tmpfs of at most `tmpfsBytes` (script runs), or a host
   * directory (dependency builds, which keep what they write elsewhere anyway).
   */
  readonly home: { readonly tmpfsBytes: number } | { readonly hostDir: string };
  /** Who the script runs as (for passwd/group); absent: it keeps uid 0 of a user namespace. */
  readonly user: SandboxUser | undefined;
  /** The run's proxy socket on the host, when network is granted. */
  readonly proxySocket?: string;
}

/** Why a granted path would break or bypass the sandbox's own layout, or `undefined` when it is fine. */
export function conflictsWithSandboxLayout(path: string): string | undefined {
  if (path === '/') return 'the whole file system is never granted';
  const hidden = BUILT_PATHS.find((built) => isInside(path, built));
  if (hidden !== undefined) return `it would hide ${hidden}, which the sandbox builds itself`;
  const tree = UNGRANTABLE_TREES.find((root) => isInside(root, path));
  if (tree !== undefined) return `nothing under ${tree} is granted`;
  return undefined;
}

/** Whether the sandbox shows `path` anyway (it lies in a system directory). */
export function isSystemPath(path: string): boolean {
  return SYSTEM_DIRS.some((dir) => isInside(dir, path));
}

export async function planRoot(request: RootRequest): Promise<RootEntry[]> {
  const entries: RootEntry[] = [];
  for (const dir of SYSTEM_DIRS) {
    const entry = await hostEntry(dir, false);
    if (entry !== undefined) entries.push(entry);
  }
  entries.push(...etcFiles(request.user, request.proxySocket !== undefined));
  for (const path of [
    ...ETC_ALWAYS,
    '/etc/localtime',
    ...(request.proxySocket === undefined ? [] : ETC_NETWORK),
  ]) {
    const entry = await hostEntry(path, false);
    if (entry !== undefined) entries.push(entry);
  }
  entries.push(...(await devEntries()), { kind: 'proc', target: '/proc' });
  entries.push(homeEntry(request.home, request.user));
  if (request.proxySocket !== undefined) {
    entries.push(
      { kind: 'dir', target: CONTROL_DIR, mode: 0o700 },
      {
        kind: 'bind',
        source: request.proxySocket,
        target: `${CONTROL_DIR}/proxy.sock`,
        writable: false,
        file: true,
      },
    );
  }
  const bound = new Set<string>();
  const bind = async (path: string, writable: boolean) => {
    if (bound.has(`${path}\0${writable}`)) return;
    bound.add(`${path}\0${writable}`);
    entries.push({ kind: 'bind', source: path, target: path, writable, file: !(await isDirectory(path)) });
  };
  // Interpreters and tools leave out what the system directories show; a path the operator lists is bound
  // even there (a /usr/local that is a mount of its own is not carried by the /usr bind).
  for (const path of request.runtimePaths) await bind(path, false);
  if (request.scriptDir !== undefined) {
    if (request.overlay === undefined) await bind(request.scriptDir, false);
    else {
      entries.push({
        kind: 'overlay',
        target: request.scriptDir,
        lowerDirs: request.overlay.lowerDirs,
        ...(request.overlay.upper === undefined
          ? {}
          : { upperDir: request.overlay.upper.upperDir, workDir: request.overlay.upper.workDir }),
      });
    }
  }
  for (const path of request.readablePaths) await bind(path, false);
  for (const path of request.writablePaths) await bind(path, true);
  return orderForMounting(entries);
}

function homeEntry(home: RootRequest['home'], user: SandboxUser | undefined): RootEntry {
  if ('hostDir' in home) {
    return { kind: 'bind', source: home.hostDir, target: SANDBOX_HOME, writable: true, file: false };
  }
  // Without a sandbox user the script is uid 0 of a user namespace, which owns a fresh tmpfs anyway.
  const owner = user === undefined ? [] : [`uid=${user.uid}`, `gid=${user.gid}`];
  const options = ['mode=0700', `size=${home.tmpfsBytes}`, ...owner, 'nosuid', 'nodev'].join(',');
  return { kind: 'tmpfs', target: SANDBOX_HOME, options };
}

/** Parents before children; among equals the order given (so a writable bind lands on a read-only one). */
function orderForMounting(entries: readonly RootEntry[]): RootEntry[] {
  const depth = (path: string) => path.split('/').filter(Boolean).length;
  return entries
    .map((entry, index) => ({ entry, index }))
    .sort((a, b) => depth(a.entry.target) - depth(b.entry.target) || a.index - b.index)
    .map(({ entry }) => entry);
}

/** A host path reproduced as it is: a symlink as the same symlink, anything else as a read-only bind. */
async function hostEntry(path: string, writable: boolean): Promise<RootEntry | undefined> {
  let info;
  try {
    info = await lstat(path);
  } catch {
    return undefined;
  }
  if (info.isSymbolicLink()) {
    const link = await readlink(path);
    // A relative link resolves inside the new root as on the host; an absolute one does too after the
    // pivot, as long as its target is shown.
    return { kind: 'symlink', target: path, link };
  }
  return { kind: 'bind', source: path, target: path, writable, file: !info.isDirectory() };
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path)).isDirectory();
}

async function devEntries(): Promise<RootEntry[]> {
  const entries: RootEntry[] = [
    { kind: 'tmpfs', target: '/dev', options: 'mode=0755,size=64k,nosuid,noexec' },
  ];
  for (const name of DEVICES) {
    const path = `/dev/${name}`;
    try {
      await stat(path);
    } catch {
      continue;
    }
    entries.push({ kind: 'bind', source: path, target: path, writable: true, file: true, device: true });
  }
  entries.push(
    { kind: 'symlink', target: '/dev/fd', link: '/proc/self/fd' },
    { kind: 'symlink', target: '/dev/stdin', link: '/proc/self/fd/0' },
    { kind: 'symlink', target: '/dev/stdout', link: '/proc/self/fd/1' },
    { kind: 'symlink', target: '/dev/stderr', link: '/proc/self/fd/2' },
    // POSIX semaphores and shared memory (Python's multiprocessing); small, private to the run.
    { kind: 'tmpfs', target: '/dev/shm', options: 'mode=1777,size=16m,nosuid,nodev,noexec' },
  );
  return entries;
}

function etcFiles(user: SandboxUser | undefined, network: boolean): RootEntry[] {
  const nologin = '/usr/sbin/nologin';
  const passwd = [`root:x:0:0:root:${user === undefined ? SANDBOX_HOME : '/root'}:${nologin}`];
  const group = ['root:x:0:'];
  if (user !== undefined) {
    passwd.push(`sandbox:x:${user.uid}:${user.gid}:sandbox:${SANDBOX_HOME}:${nologin}`);
    group.push(`sandbox:x:${user.gid}:`);
  }
  const file = (target: string, lines: readonly string[]): RootEntry => ({
    kind: 'file',
    target,
    content: `${lines.join('\n')}\n`,
    mode: 0o644,
  });
  return [
    file('/etc/passwd', passwd),
    file('/etc/group', group),
    file('/etc/nsswitch.conf', ['passwd: files', 'group: files', 'hosts: files']),
    // No resolv.conf: names are resolved by the proxy, outside.
    ...(network ? [file('/etc/hosts', ['127.0.0.1 localhost', '::1 localhost ip6-localhost'])] : []),
  ];
}

/** For runtime paths of an interpreter: its directory and, for `<prefix>/bin`, `<prefix>/lib*`. */
export function installDirsOf(realBinary: string): string[] {
  const dir = dirname(realBinary);
  if (!dir.endsWith('/bin')) return [dir];
  const prefix = dirname(dir);
  return [dir, `${prefix}/lib`, `${prefix}/lib64`];
}
