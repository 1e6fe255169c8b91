// Every process npm start runs, as one tree in the start script's process group, and the one way it
// ends. Node.js children are started with an IPC channel and exit-with-parent.mjs preloaded, and
// nats-server under `setpriv --pdeathsig TERM`, so that each stops when the start script dies, however it
// dies. Any member that exits on its own (a crash, a SIGTERM from outside) stops the whole tree with a
// line naming it, unless it was started with `onExit` (NATS: nats-server.mjs restarts it instead);
// SIGINT/SIGTERM to the start script stop it too. Stopping signals the services first
// (each drains its NATS connection), then closes the in-process demo servers, then stops NATS.
import { spawn } from 'node:child_process';
import { clearTimeout, setTimeout } from 'node:timers';
import { say, sayError } from './output.mjs';
import { findExecutable } from './nats-source.mjs';

const exitWithParent = new URL('./exit-with-parent.mjs', import.meta.url).href;
// How long a member may take to stop after SIGTERM before it is killed.
const STOP_GRACE_MS = 20_000;

/** { name, child, last } — `last` members (NATS) are stopped after everything else. */
const members = [];
/** In-process things to close between the services and NATS (the demo servers), and temp dirs. */
const closers = [];
const finalizers = [];
let stopping;

export function isStopping() {
  return stopping !== undefined;
}

export function onStop(close) {
  closers.push(close);
}

export function finallyOnStop(finalize) {
  finalizers.push(finalize);
}

function alive(child) {
  return child.exitCode === null && child.signalCode === null;
}

export function describeExit(code, signal) {
  return signal ? `killed by ${signal}` : `exit code ${code}`;
}

function register(name, child, { last = false, oneShot = false, onExit } = {}) {
  const member = { name, child, last };
  members.push(member);
  child.once('error', (error) => {
    if (!isStopping()) void stopAll(1, `${name} could not be started: ${error.message}`);
  });
  child.once('exit', (code, signal) => {
    // A one-shot step (build, provisioning) ends by itself; its caller reads the exit code.
    if (oneShot || isStopping()) return;
    if (onExit) {
      members.splice(members.indexOf(member), 1);
      return onExit(code, signal);
    }
    void stopAll(1, `${name} exited (${describeExit(code, signal)}): stopping the mesh`);
  });
  return child;
}

/** Refuses to start anything once the tree is stopping. */
function assertRunning(name) {
  if (isStopping()) throw new StoppingError(`not starting ${name}: the mesh is stopping`);
}

/** Thrown into the start-up sequence when a stop began meanwhile; nothing to report. */
export class StoppingError extends Error {
  name = 'StoppingError';
}

/** A Node.js child (a service, the provisioner, the mesh on a newer Node) that stops with this process. */
export function spawnNode(name, node, args, options = {}, { oneShot = false, stdio } = {}) {
  assertRunning(name);
  const child = spawn(node, ['--import', exitWithParent, ...args], {
    ...options,
    stdio: [...(stdio ?? ['ignore', 'inherit', 'inherit']), 'ipc'],
  });
  return register(name, child, { oneShot });
}

/**
 * A non-Node child (nats-server, `docker run`, the build). With `last`, it is stopped after everything
 * else; it is killed (SIGTERM) by the kernel when this process dies where setpriv can ask for that. With
 * `onExit(code, signal)`, its exit while the tree runs is that function's business, not a stop.
 */
export function spawnProcess(
  name,
  command,
  args,
  options = {},
  { last = false, oneShot = false, onExit } = {},
) {
  assertRunning(name);
  const setpriv = findExecutable('setpriv');
  const child = setpriv
    ? spawn(setpriv, ['--pdeathsig', 'TERM', '--', command, ...args], options)
    : spawn(command, args, options);
  return register(name, child, { last, oneShot, onExit });
}

/** Resolves with [code, signal] when `child` has exited. */
export function exitOf(child) {
  if (!alive(child)) return Promise.resolve([child.exitCode, child.signalCode]);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve([code, signal])));
}

async function terminate(group) {
  const running = group.filter((member) => alive(member.child));
  for (const member of running) member.child.kill('SIGTERM');
  await Promise.all(
    running.map(async (member) => {
      let timer;
      const killed = new Promise((resolve) => {
        timer = setTimeout(() => {
          say(`${member.name} did not stop within ${STOP_GRACE_MS / 1000} s: killing it`);
          member.child.kill('SIGKILL');
          resolve();
        }, STOP_GRACE_MS);
      });
      await Promise.race([exitOf(member.child), killed]);
      await exitOf(member.child);
      clearTimeout(timer);
    }),
  );
}

/** Stops every member (services, then in-process servers, then NATS) and exits with `code`. */
export function stopAll(code, reason) {
  if (stopping) return stopping;
  stopping = (async () => {
    if (reason) {
      if (code === 0) say(reason);
      else sayError(reason);
    }
    say('stopping');
    await terminate(members.filter((member) => !member.last));
    for (const close of closers) await Promise.resolve(close()).catch(() => undefined);
    await terminate(members.filter((member) => member.last));
    for (const finalize of finalizers) {
      try {
        finalize();
      } catch {
        // best effort: a temp directory left behind is no reason to keep running
      }
    }
    say('stopped');
    process.exit(code);
  })();
  return stopping;
}

/** SIGINT/SIGTERM stop the tree (exit 0); an error nobody caught stops it too (exit 1), without a stack. */
export function stopOnSignalsAndErrors() {
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => void stopAll(0, `${signal} received`));
  // Start-up errors are reported by the start-up sequence; these are the rest.
  process.on('uncaughtException', (error) => void stopAll(1, error));
  process.on('unhandledRejection', (error) => void stopAll(1, error));
}
