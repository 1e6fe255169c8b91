// First process inside a script's sandbox (pid 1 of its pid namespace, root of its private mount
// namespace, started by `unshare`). It reads its plan as JSON from fd 3, turns every mount read-only,
// re-binds the granted write paths read-write, optionally lays the dependency overlay over the script's
// directory, then runs the (privilege-dropping) command and reports how it ended as one JSON line on
// fd 4. When this process exits the kernel kills everything left in the namespace.
//
// Plain JavaScript run by the runner's own node, so it works from both `src/` and `dist/`.
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { Socket } from 'node:net';

const SPEC_FD = 3;
const STATUS_FD = 4;

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

// Per-mount flags a remount must repeat: inside a user namespace they are locked, and dropping them
// would make the remount fail; as root it would quietly weaken the mount.
const KEPT_FLAGS = new Set(['nosuid', 'nodev', 'noexec', 'noatime', 'nodiratime', 'relatime', 'strictatime']);

/** Mount points of this namespace with their kept flags; mountinfo escapes odd characters as octal. */
function mounts() {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .trim()
    .split('\n')
    .map((line) => {
      const fields = line.split(' ');
      const point = fields[4].replace(/\\([0-7]{3})/g, (_, octal) => String.fromCharCode(parseInt(octal, 8)));
      const flags = fields[5].split(',').filter((flag) => KEPT_FLAGS.has(flag));
      return { point, flags };
    });
}

function mount(spec, args) {
  execFileSync(spec.mountCommand, args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function bindWritable(spec, path, fd) {
  // Binding from /proc/<pid>/fd reaches the real directory even when an overlay now hides its path.
  mount(spec, ['--bind', `/proc/${process.pid}/fd/${fd}`, path]);
  const flags = mounts().findLast((entry) => entry.point === path)?.flags ?? [];
  mount(spec, ['-o', ['remount', 'bind', 'rw', ...flags].join(','), path]);
}

function isInside(root, path) {
  return path === root || path.startsWith(root.endsWith('/') ? root : `${root}/`);
}

function prepareFilesystem(spec) {
  // Read-only first: every mount, including ones a script could otherwise reach via /proc or /dev.
  for (const { point, flags } of mounts()) {
    try {
      mount(spec, ['-o', ['remount', 'bind', 'ro', ...flags].join(','), point]);
    } catch (error) {
      // A mount whose mount point vanished meanwhile (a container's overlay removed by its engine while
      // this namespace was made) cannot be reached by any path; everything else must be read-only.
      if (existsSync(point)) throw error;
    }
  }
  const writable = spec.writablePaths.map((path) => ({ path, fd: openSync(path, 'r') }));
  for (const { path, fd } of writable) bindWritable(spec, path, fd);
  if (spec.overlay) {
    const { target, lowerDirs, upperDir, workDir } = spec.overlay;
    const options = [`lowerdir=${lowerDirs.join(':')}`];
    if (upperDir) options.push(`upperdir=${upperDir}`, `workdir=${workDir}`);
    mount(spec, ['-t', 'overlay', 'overlay', '-o', options.join(','), target]);
    for (const { path, fd } of writable) if (isInside(target, path)) bindWritable(spec, path, fd);
  }
  for (const { fd } of writable) closeSync(fd);
}

function runCommand(spec) {
  const [command, ...args] = spec.command;
  const child = spawn(command, args, { cwd: spec.cwd, env: spec.env, stdio: 'inherit' });
  child.on('error', (error) => {
    report({ kind: 'setup-error', message: `could not start ${command}: ${error.message}` });
    process.exit(125);
  });
  child.on('exit', (exitCode, signal) => {
    report({ kind: 'exit', exitCode, signal });
    process.exit(exitCode ?? 128);
  });
}

let spec;
try {
  spec = await readSpec();
  prepareFilesystem(spec);
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
