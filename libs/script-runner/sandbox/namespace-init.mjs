// First process inside a script's sandbox (pid 1 of its pid namespace, in its own mount, network, IPC
// and UTS namespaces, started by `unshare`). It reads its plan as JSON from fd 3, enters the run's
// cgroup when the plan names one (so every process of the run is counted there before the script
// starts), sets the run's host name, and builds the run's root from
// nothing: a fresh tmpfs, then only the entries of the plan (bind mounts of host paths, overlays, a new
// /proc, a small /dev, generated files). It then pivots into that root and detaches the host's, so no
// other host path can be reached by any name. When the plan asks for network, it brings up loopback
// and relays 127.0.0.1:<port> to the runner's filtering proxy (a unix socket bound into the root).
// Finally it starts the command, which drops privileges before any of the script's environment is
// applied, and reports how it ended as one JSON line on fd 4. When this process exits the kernel
// kills everything left in the namespace.
//
// The plan is built (and ordered: parents before children) by sandbox-root.ts; this file only carries
// it out. Plain JavaScript run by the runner's own node, so it works from both `src/` and `dist/`; it
// keeps running after the pivot although its own binary is no longer visible.
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  rmdirSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { connect, createServer, Socket } from 'node:net';
import { dirname } from 'node:path';

const SPEC_FD = 3;
const STATUS_FD = 4;
/** Where the old root hangs between pivot_root and its detachment. */
const OLD_ROOT = '/.old-root';

function report(status) {
  writeSync(STATUS_FD, `${JSON.stringify(status)}\n`);
}

function readSpec() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    const socket = new Socket({ fd: SPEC_FD, readable: true, writable: false });
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    // Destroying closes fd 3, so the script never inherits it.
    socket.on('end', () => {
      socket.destroy();
      try {
        resolve(JSON.parse(chunks.map((chunk) => chunk.toString('utf8')).join('')));
      } catch (error) {
        reject(error);
      }
    });
  });
}

// Per-mount flags a bind must repeat: inside a user namespace they are locked on the source mount, and
// leaving them out would make the read-only remount of the bind fail.
const KEPT_FLAGS = new Set(['nosuid', 'nodev', 'noexec', 'noatime', 'nodiratime', 'relatime', 'strictatime']);

function unescapeMountPath(field) {
  return field.replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
}

/** The kept flags of the mount that holds `path` (the longest mount point above it). */
function sourceFlags(path) {
  let best = { point: '', flags: [] };
  for (const line of readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n')) {
    const fields = line.split(' ');
    const point = unescapeMountPath(fields[4]);
    const inside = point === '/' || path === point || path.startsWith(`${point}/`);
    if (inside && point.length >= best.point.length) {
      best = { point, flags: fields[5].split(',').filter((flag) => KEPT_FLAGS.has(flag)) };
    }
  }
  return best.flags;
}

function run(command, args) {
  execFileSync(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function ensureMountPoint(path, file) {
  if (existsSync(path)) return;
  mkdirSync(file ? dirname(path) : path, { recursive: true, mode: 0o755 });
  if (file) writeFileSync(path, '', { mode: 0o644 });
}

function flagsOf(list) {
  return [...new Set(list)].join(',');
}

/** Carries out one entry of the plan under the new root `root`. */
function apply(spec, root, entry) {
  const target = `${root}${entry.target}`;
  const mount = (args) => run(spec.tools.mount, args);
  switch (entry.kind) {
    case 'dir':
      mkdirSync(target, { recursive: true, mode: entry.mode });
      return;
    case 'symlink':
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      symlinkSync(entry.link, target);
      return;
    case 'file':
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      writeFileSync(target, entry.content, { mode: entry.mode });
      return;
    case 'bind': {
      ensureMountPoint(target, entry.file);
      // Devices need their node to work; everything else loses device files and set-uid bits.
      const safety = entry.device ? ['nosuid', 'noexec'] : ['nosuid', 'nodev'];
      const flags = [entry.writable ? 'rw' : 'ro', ...safety, ...sourceFlags(entry.source)];
      mount(['--bind', '-o', flagsOf(flags), entry.source, target]);
      return;
    }
    case 'tmpfs':
      ensureMountPoint(target, false);
      mount(['-t', 'tmpfs', '-o', entry.options, 'tmpfs', target]);
      return;
    case 'proc':
      ensureMountPoint(target, false);
      // This process is pid 1 of the run's pid namespace: the new proc shows only the run's processes,
      // and hidepid hides those of other users (this helper, still root) from the script.
      mount(['-t', 'proc', '-o', 'nosuid,nodev,noexec,hidepid=2', 'proc', target]);
      return;
    case 'overlay': {
      ensureMountPoint(target, false);
      const options = [`lowerdir=${entry.lowerDirs.join(':')}`];
      if (entry.upperDir !== undefined)
        options.push(`upperdir=${entry.upperDir}`, `workdir=${entry.workDir}`);
      options.push('nosuid', 'nodev');
      mount(['-t', 'overlay', 'overlay', '-o', options.join(','), target]);
      return;
    }
    default:
      throw new Error(`unknown plan entry ${JSON.stringify(entry.kind)}`);
  }
}

function buildRoot(spec) {
  const root = spec.root;
  run(spec.tools.mount, ['-t', 'tmpfs', '-o', 'mode=0755,size=4m,nosuid,nodev', 'tmpfs', root]);
  for (const entry of spec.entries) apply(spec, root, entry);
  if (spec.proxy !== undefined) run(spec.tools.ip, ['link', 'set', 'lo', 'up']);
  mkdirSync(`${root}${OLD_ROOT}`, { mode: 0o700 });
  run(spec.tools.pivotRoot, [root, `${root}${OLD_ROOT}`]);
  // pivot_root moved this process's root and working directory into the new root; the host's root now
  // hangs at OLD_ROOT until it is detached here, after which no name reaches it.
  process.chdir('/');
  run(spec.tools.umount, ['-l', OLD_ROOT]);
  rmdirSync(OLD_ROOT);
  run(spec.tools.mount, ['-o', 'remount,bind,ro,nosuid,nodev', '/']);
}

/** 127.0.0.1:<port> inside the namespace → the runner's proxy socket (which does all the filtering). */
function startRelay(proxy) {
  const server = createServer((client) => {
    const upstream = connect(proxy.socket);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const socket of [client, upstream]) {
      socket.on('error', close);
      socket.on('close', close);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(proxy.port, '127.0.0.1', resolve);
  });
}

function runCommand(spec) {
  const [command, ...args] = spec.command;
  // With uid/gid the child drops groups, gid and uid before exec: the environment only ever reaches
  // processes that already run as the sandbox user.
  const identity = spec.identity === undefined ? {} : { uid: spec.identity.uid, gid: spec.identity.gid };
  const child = spawn(command, args, { cwd: spec.cwd, env: spec.env, stdio: 'inherit', ...identity });
  child.on('error', (error) => {
    report({ kind: 'setup-error', message: `could not start ${command}: ${error.message}` });
    process.exit(125);
  });
  child.on('exit', (exitCode, signal) => {
    report({ kind: 'exit', exitCode, signal });
    process.exit(exitCode ?? 128);
  });
}

/** Writing 0 to a cgroup.procs file moves the writer itself (v1 and v2); children inherit it. */
function enterCgroup(procsFiles) {
  for (const file of procsFiles) writeFileSync(file, '0');
}

/**
 * The UTS namespace starts with a copy of the host's name; give it the sandbox's. Best effort: a host that
 * mounts /proc/sys read-only keeps the copy, which is no reason to refuse the whole sandbox.
 */
function setHostname(name) {
  try {
    writeFileSync('/proc/sys/kernel/hostname', name);
  } catch {
    // The run keeps the host's name.
  }
}

let spec;
try {
  spec = await readSpec();
  if (spec.cgroupProcs !== undefined) enterCgroup(spec.cgroupProcs);
  setHostname(spec.hostname);
  buildRoot(spec);
  if (spec.proxy !== undefined) await startRelay(spec.proxy);
} catch (error) {
  const stderr = error && error.stderr ? `: ${String(error.stderr).trim()}` : '';
  report({ kind: 'setup-error', message: `sandbox setup failed: ${error?.message ?? error}${stderr}` });
  process.exit(125);
}
if (spec.probe) {
  report({ kind: 'exit', exitCode: 0, signal: null });
  process.exit(0);
}
runCommand(spec);
