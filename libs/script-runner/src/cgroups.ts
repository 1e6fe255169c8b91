/**
 * A control group per sandboxed run, so that limits hold for all of a run's processes together (the
 * rlimits hold per process, and RLIMIT_NPROC per uid across every run): memory (swap included), tasks
 * and CPU weight. Found once per runner (`locateCgroups`, `openCgroupHost`), under the runner's own
 * cgroup as /proc/self/cgroup names it:
 *
 * - cgroup v2 (the unified hierarchy, with memory and pids delegated to the runner's cgroup): runs are
 *   children of that cgroup. Because a cgroup with processes in it may not hand controllers to children,
 *   the runner first moves itself into a leaf child (`agentmesh-runner`) when it has to; another process
 *   in its cgroup makes that impossible and cgroups are then not used.
 * - cgroup v1 (separate memory, pids and, when mounted, cpu hierarchies): one child per hierarchy.
 *
 * The sandbox's first process writes itself into the run's `cgroup.procs` files before it builds the
 * root, so every process of the run is inside before the script starts. At the end, everything left in
 * the cgroup is killed and the cgroup removed.
 */
import { randomBytes } from 'node:crypto';
import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { isErrno } from './path-jail.js';

export interface RunCgroupLimits {
  /** All of the run's memory together (anonymous, page cache, tmpfs, shared memory); no swap. */
  readonly memoryBytes: number;
  /** Tasks (processes and threads) of the run at once, the sandbox's own helper included. */
  readonly maxTasks: number;
  /** CPU weight as cgroup v2 counts it (1-10000, 100 the default); cpu.shares = weight × 1024 / 100 in v1. */
  readonly cpuWeight: number;
}

/** The cgroup hierarchies a run's cgroup is created in. */
export type CgroupLocation =
  | {
      readonly version: 2;
      /** The runner's own cgroup directory in the unified hierarchy. */
      readonly own: string;
    }
  | {
      readonly version: 1;
      readonly memory: string;
      readonly pids: string;
      /** Absent when no v1 cpu hierarchy is mounted: no CPU weight then. */
      readonly cpu?: string;
    };

export interface CgroupHost {
  readonly version: 1 | 2;
  /** One line for operators: which mechanism, where, which controllers. */
  readonly description: string;
  create(limits: RunCgroupLimits): Promise<RunCgroup>;
}

export interface RunCgroup {
  /** The `cgroup.procs` files the sandbox's first process writes itself into (one per hierarchy). */
  readonly procsFiles: readonly string[];
  /** How many times the kernel's OOM killer acted in this cgroup (the run went past its memory). */
  oomKills(): Promise<number>;
  /** SIGKILLs every process in the cgroup. */
  kill(): Promise<void>;
  /** Kills what is left, waits until the cgroup is empty and removes it. */
  remove(): Promise<void>;
}

interface MountInfo {
  readonly root: string;
  readonly point: string;
  readonly fsType: string;
  readonly superOptions: readonly string[];
}

const RUNNER_LEAF = 'agentmesh-runner';
const REMOVE_WAIT_MS = 5_000;
const REMOVE_POLL_MS = 20;

/** Where this process's cgroups are, in each hierarchy that could hold a run's cgroup. */
export interface CgroupCandidates {
  /** The runner's own cgroup directory in the unified (v2) hierarchy, when one is mounted. */
  readonly v2?: string;
  /** The v1 memory and pids (and cpu) directories, when those hierarchies are mounted. */
  readonly v1?: Extract<CgroupLocation, { version: 1 }>;
}

/**
 * Reads the texts of /proc/self/cgroup and /proc/self/mountinfo. Pure, so that it can be checked on other
 * hosts' texts.
 */
export function locateCgroups(procCgroup: string, mountinfo: string): CgroupCandidates {
  const mounts = parseMountinfo(mountinfo);
  const memberships = procCgroup
    .trim()
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const [id = '', controllers = '', ...rest] = line.split(':');
      return { id, controllers: controllers === '' ? [] : controllers.split(','), path: rest.join(':') };
    });
  const unified = memberships.find((entry) => entry.id === '0' && entry.controllers.length === 0);
  const v2Mount = mounts.find((mount) => mount.fsType === 'cgroup2');
  const v2 = unified === undefined || v2Mount === undefined ? undefined : under(v2Mount, unified.path);

  const v1 = (controller: string): string | undefined => {
    const membership = memberships.find((entry) => entry.controllers.includes(controller));
    const mount = mounts.find(
      (entry) => entry.fsType === 'cgroup' && entry.superOptions.includes(controller),
    );
    return membership === undefined || mount === undefined ? undefined : under(mount, membership.path);
  };
  const memory = v1('memory');
  const pids = v1('pids');
  const cpu = v1('cpu');
  return {
    ...(v2 === undefined ? {} : { v2 }),
    ...(memory === undefined || pids === undefined
      ? {}
      : { v1: { version: 1, memory, pids, ...(cpu === undefined ? {} : { cpu }) } }),
  };
}

/**
 * Picks the mechanism: v2 when the runner's v2 cgroup offers memory and pids (`v2Controllers`: what its
 * cgroup.controllers lists), otherwise v1; or says why neither.
 */
export function chooseCgroups(
  candidates: CgroupCandidates,
  v2Controllers: readonly string[] | undefined,
): { location: CgroupLocation } | { unavailable: string } {
  const reasons: string[] = [];
  if (candidates.v2 !== undefined) {
    if (v2Controllers?.includes('memory') && v2Controllers.includes('pids')) {
      return { location: { version: 2, own: candidates.v2 } };
    }
    reasons.push(
      `cgroup v2: ${candidates.v2} has no memory and pids controllers` +
        (v2Controllers === undefined ? '' : ` (it has: ${v2Controllers.join(' ') || 'none'})`),
    );
  } else {
    reasons.push('no cgroup v2 hierarchy is mounted');
  }
  if (candidates.v1 !== undefined) return { location: candidates.v1 };
  reasons.push('no cgroup v1 memory and pids hierarchies are mounted');
  return { unavailable: reasons.join('; ') };
}

function parseMountinfo(text: string): MountInfo[] {
  const mounts: MountInfo[] = [];
  for (const line of text.trim().split('\n')) {
    const [before, after] = line.split(' - ');
    if (before === undefined || after === undefined) continue;
    const fields = before.split(' ');
    const [fsType, , superOptions = ''] = after.split(' ');
    const root = fields[3];
    const point = fields[4];
    if (root === undefined || point === undefined || fsType === undefined) continue;
    mounts.push({
      root: unescapeMountPath(root),
      point: unescapeMountPath(point),
      fsType,
      superOptions: superOptions.split(','),
    });
  }
  return mounts;
}

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

/** The directory of cgroup `path` under `mount`, when the mount shows it. */
function under(mount: MountInfo, path: string): string | undefined {
  const relative =
    mount.root === '/'
      ? path
      : path === mount.root
        ? ''
        : path.startsWith(`${mount.root}/`)
          ? path.slice(mount.root.length)
          : undefined;
  if (relative === undefined) return undefined;
  return join(mount.point, relative).replace(/(.)\/$/, '$1');
}

/**
 * Reads this process's cgroups and prepares the hierarchy runs are created in (v2: enables the
 * controllers for children, moving this process into a leaf when it has to).
 */
export async function openCgroupHost(): Promise<{ host: CgroupHost } | { unavailable: string }> {
  let procCgroup: string;
  let mountinfo: string;
  try {
    [procCgroup, mountinfo] = await Promise.all([
      readFile('/proc/self/cgroup', 'utf8'),
      readFile('/proc/self/mountinfo', 'utf8'),
    ]);
  } catch (error) {
    return { unavailable: `the process's cgroups cannot be read: ${(error as Error).message}` };
  }
  const candidates = locateCgroups(procCgroup, mountinfo);
  const v2Controllers =
    candidates.v2 === undefined ? undefined : await readWords(join(candidates.v2, 'cgroup.controllers'));
  const located = chooseCgroups(candidates, v2Controllers);
  if ('unavailable' in located) return located;
  const { location } = located;
  try {
    if (location.version === 1) return { host: openV1(location) };
    // Already moved into the leaf (by another runner of this process): runs go beside it, as before.
    const own = basename(location.own) === RUNNER_LEAF ? dirname(location.own) : location.own;
    return { host: await openV2(own) };
  } catch (error) {
    return {
      unavailable: `runs' cgroups cannot be made under ${describeLocation(location)}: ${(error as Error).message}`,
    };
  }
}

function describeLocation(location: CgroupLocation): string {
  return location.version === 2
    ? location.own
    : [location.memory, location.pids, location.cpu].filter(Boolean).join(', ');
}

function runName(): string {
  return `agentmesh-run-${randomBytes(6).toString('hex')}`;
}

async function readWords(path: string): Promise<string[] | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim().split(/\s+/).filter(Boolean);
  } catch {
    return undefined;
  }
}

async function openV2(own: string): Promise<CgroupHost> {
  const wanted = ['memory', 'pids'];
  const withCpu = (await readWords(join(own, 'cgroup.controllers')))?.includes('cpu') === true;
  if (withCpu) wanted.push('cpu');
  const enabled = (await readWords(join(own, 'cgroup.subtree_control'))) ?? [];
  if (!wanted.every((controller) => enabled.includes(controller))) {
    const enable = () =>
      writeFile(join(own, 'cgroup.subtree_control'), wanted.map((name) => `+${name}`).join(' '));
    try {
      await enable();
    } catch (error) {
      // "No internal processes": a cgroup with members cannot give controllers to children. Move this
      // process into a leaf of its own first (what a delegated service is expected to do).
      if (!isErrno(error, 'EBUSY')) throw error;
      const leaf = join(own, RUNNER_LEAF);
      await mkdir(leaf, { recursive: true });
      await writeFile(join(leaf, 'cgroup.procs'), String(process.pid));
      try {
        await enable();
      } catch (retry) {
        if (!isErrno(retry, 'EBUSY')) throw retry;
        throw new Error(
          `${own} holds processes other than this runner, so it cannot hand memory and pids to children; give the runner a delegated cgroup of its own`,
          { cause: retry },
        );
      }
    }
  }
  return {
    version: 2,
    description: `cgroup v2 below ${own} (memory.max, memory.swap.max, pids.max${withCpu ? ', cpu.weight' : ''})`,
    async create(limits) {
      const dir = join(own, runName());
      await mkdir(dir);
      const group = v2Group(dir);
      try {
        await writeFile(join(dir, 'memory.max'), String(limits.memoryBytes));
        await writeOptional(join(dir, 'memory.swap.max'), '0');
        // One OOM kill takes the whole run: no half-killed run limps on.
        await writeOptional(join(dir, 'memory.oom.group'), '1');
        await writeFile(join(dir, 'pids.max'), String(limits.maxTasks));
        if (withCpu) await writeFile(join(dir, 'cpu.weight'), String(limits.cpuWeight));
      } catch (error) {
        await group.remove();
        throw error;
      }
      return group;
    },
  };
}

function v2Group(dir: string): RunCgroup {
  const kill = async () => {
    try {
      await writeFile(join(dir, 'cgroup.kill'), '1');
      return;
    } catch (error) {
      if (isErrno(error, 'ENOENT') && (await exists(dir))) await killMembers([dir]);
      else if (!isErrno(error, 'ENOENT')) throw error;
    }
  };
  return {
    procsFiles: [join(dir, 'cgroup.procs')],
    oomKills: async () => counter(join(dir, 'memory.events'), 'oom_kill'),
    kill,
    remove: () => removeGroups([dir], kill),
  };
}

function openV1(location: Extract<CgroupLocation, { version: 1 }>): CgroupHost {
  const cpu = location.cpu;
  return {
    version: 1,
    description: `cgroup v1 below ${describeLocation(location)} (memory.limit_in_bytes, memory.memsw.limit_in_bytes where present, pids.max${cpu === undefined ? '' : ', cpu.shares'})`,
    async create(limits) {
      const name = runName();
      const memory = join(location.memory, name);
      const pids = join(location.pids, name);
      const cpuDir = cpu === undefined ? undefined : join(cpu, name);
      const dirs = [memory, pids, ...(cpuDir === undefined ? [] : [cpuDir])];
      const created: string[] = [];
      const kill = () => killMembers(created);
      const group: RunCgroup = {
        procsFiles: dirs.map((dir) => join(dir, 'cgroup.procs')),
        oomKills: () => counter(join(memory, 'memory.oom_control'), 'oom_kill'),
        kill,
        remove: () => removeGroups(created, kill),
      };
      try {
        for (const dir of dirs) {
          await mkdir(dir);
          created.push(dir);
        }
        await writeFile(join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
        // memsw (memory + swap) must not be below the memory limit, so it is written second.
        await writeOptional(join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes));
        await writeFile(join(pids, 'pids.max'), String(limits.maxTasks));
        if (cpuDir !== undefined) {
          const shares = Math.max(2, Math.round((limits.cpuWeight * 1024) / 100));
          await writeFile(join(cpuDir, 'cpu.shares'), String(shares));
        }
      } catch (error) {
        await group.remove();
        throw error;
      }
      return group;
    },
  };
}

async function writeOptional(path: string, value: string): Promise<void> {
  try {
    await writeFile(path, value);
  } catch (error) {
    // Absent without swap accounting (or on older kernels): the plain memory limit still holds.
    if (!isErrno(error, 'ENOENT')) throw error;
  }
}

async function counter(path: string, name: string): Promise<number> {
  try {
    const text = await readFile(path, 'utf8');
    const match = new RegExp(`^${name} (\\d+)$`, 'm').exec(text);
    return match?.[1] === undefined ? 0 : Number(match[1]);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return 0;
    throw error;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

async function members(dirs: readonly string[]): Promise<number[]> {
  const pids = new Set<number>();
  for (const dir of dirs) {
    try {
      for (const entry of (await readFile(join(dir, 'cgroup.procs'), 'utf8')).split('\n')) {
        if (entry.trim() !== '') pids.add(Number(entry));
      }
    } catch (error) {
      if (!isErrno(error, 'ENOENT')) throw error;
    }
  }
  return [...pids];
}

async function killMembers(dirs: readonly string[]): Promise<void> {
  for (const pid of await members(dirs)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch (error) {
      if (!isErrno(error, 'ESRCH')) throw error;
    }
  }
}

/** Kills, then removes each directory once its last member is gone (rmdir says EBUSY until then). */
async function removeGroups(dirs: readonly string[], kill: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + REMOVE_WAIT_MS;
  for (const dir of dirs) {
    for (;;) {
      try {
        await rmdir(dir);
        break;
      } catch (error) {
        if (isErrno(error, 'ENOENT')) break;
        if (!isErrno(error, 'EBUSY') || Date.now() > deadline) throw error;
      }
      await kill();
      await new Promise((resolve) => setTimeout(resolve, REMOVE_POLL_MS));
    }
  }
}

export interface MemoryWatch {
  /** Stops watching; whether the run went past its memory limit (the OOM killer acted in its cgroup). */
  stop(): Promise<boolean>;
}

const MEMORY_WATCH_MS = 200;

/**
 * Watches a run's cgroup for the OOM killer: once it has acted, the rest of the run is killed too (on
 * cgroup v1 the kernel kills one process only, and a run missing a process should not limp on).
 */
export function watchMemory(cgroup: RunCgroup): MemoryWatch {
  let exceeded = false;
  let checking = false;
  const check = async () => {
    if (exceeded || checking) return;
    checking = true;
    try {
      if ((await cgroup.oomKills()) > 0) {
        exceeded = true;
        await cgroup.kill();
      }
    } catch {
      // The cgroup is going away with the run; `stop` reads the count once more.
    } finally {
      checking = false;
    }
  };
  const timer = setInterval(() => void check(), MEMORY_WATCH_MS);
  timer.unref();
  let stopped: Promise<boolean> | undefined;
  const finalCheck = async () => {
    clearInterval(timer);
    if (!exceeded) {
      try {
        exceeded = (await cgroup.oomKills()) > 0;
      } catch {
        // Removed already: nothing more to learn.
      }
    }
    return exceeded;
  };
  return {
    stop() {
      stopped ??= finalCheck();
      return stopped;
    },
  };
}
