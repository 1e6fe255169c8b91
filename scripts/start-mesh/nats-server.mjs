// NATS for npm start, from the source nats-source.mjs chose: with infra/nats/accounts.conf and a
// password per user (generated, or kept in the data directory), its config and JetStream store in the
// data directory or in a temporary one removed at stop. If the server dies while the mesh runs, it is
// started again on the same port and store (said on stdout); the services reconnect by themselves.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { say } from './output.mjs';
import { freePort } from './ports.mjs';
import {
  describeExit,
  finallyOnStop,
  isStopping,
  spawnProcess,
  stopAll,
  StoppingError,
} from './process-tree.mjs';

const NATS_DIR_PREFIX = 'agentmesh-nats-';
const OWNER_FILE = 'start-mesh.pid';
// More restarts than this within RESTART_WINDOW_MS is a server that cannot run: stop the mesh instead.
const MAX_RESTARTS = 5;
const RESTART_WINDOW_MS = 60_000;

function waitForPort(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (isStopping()) return reject(new StoppingError('stopping'));
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline)
          reject(new Error(`NATS did not listen on 127.0.0.1:${port} within ${timeoutMs / 1000} s`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Major.minor of a `nats-server --version` output, e.g. [2, 9]; undefined when unreadable. */
function serverVersion(output) {
  const match = /v?(\d+)\.(\d+)\.\d+/.exec(output ?? '');
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

/**
 * Removes the temporary NATS directories (config and JetStream store) of earlier runs that were killed
 * before they could remove their own: those whose start script is no longer running.
 */
function removeOrphanedNatsDirs() {
  for (const name of readdirSync(tmpdir()).filter((entry) => entry.startsWith(NATS_DIR_PREFIX))) {
    const dir = join(tmpdir(), name);
    let owner;
    try {
      owner = Number(readFileSync(join(dir, OWNER_FILE), 'utf8'));
      process.kill(owner, 0);
    } catch (error) {
      // ESRCH: its start script is gone. No owner file: not ours to judge; EPERM: someone else's, alive.
      if (owner && error?.code === 'ESRCH') rmSync(dir, { recursive: true, force: true });
    }
  }
}

/** This run's NATS directory: `<data dir>/nats`, kept; else a temporary one removed at stop. */
function natsDir(state) {
  if (state.dir) {
    const dir = join(state.dir, 'nats');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }
  removeOrphanedNatsDirs();
  const dir = mkdtempSync(join(tmpdir(), NATS_DIR_PREFIX));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  finallyOnStop(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The config in `dir`: infra/nats/accounts.conf, the JetStream durability include the server
 * understands (`sync_interval: always` needs 2.12+), and a server config on `port` with the store under
 * `dir` (a fixed server name, so a kept store is the same server's on the next run).
 */
function writeNatsConfig(root, dir, port, version) {
  const infra = join(root, 'infra', 'nats');
  copyFileSync(join(infra, 'accounts.conf'), join(dir, 'accounts.conf'));
  const durable = version !== undefined && (version[0] > 2 || (version[0] === 2 && version[1] >= 12));
  copyFileSync(
    join(infra, durable ? 'jetstream-durability.conf' : 'jetstream-durability.pre-2.12.conf'),
    join(dir, 'jetstream-durability.conf'),
  );
  if (!durable) {
    say('nats-server is older than 2.12: JetStream keeps its lazy fsync here (fine for development only)');
  }
  writeFileSync(
    join(dir, 'mesh.conf'),
    `server_name: agentmesh-dev\nlisten: 127.0.0.1:${port}\n` +
      `jetstream {\n  store_dir: ${JSON.stringify(join(dir, 'store'))}\n  include ./jetstream-durability.conf\n}\n` +
      'include ./accounts.conf\n',
  );
}

/**
 * Runs `launch()` now, and again whenever the server it starts exits while the mesh runs (say so);
 * a server that keeps dying stops the mesh.
 */
function keepRunning(what, dir, launch) {
  const restarts = [];
  const start = () =>
    launch((code, signal) => {
      const now = Date.now();
      restarts.push(now);
      while (restarts.length > 0 && restarts[0] < now - RESTART_WINDOW_MS) restarts.shift();
      if (restarts.length > MAX_RESTARTS) {
        void stopAll(1, `${what} exited ${MAX_RESTARTS + 1} times within a minute: stopping the mesh`);
        return;
      }
      say(
        `${what} exited (${describeExit(code, signal)}): restarting it on the same store (${dir}); ` +
          'the services reconnect by themselves',
      );
      try {
        start();
      } catch (error) {
        if (!isStopping()) void stopAll(1, `could not restart ${what}: ${error.message}`);
      }
    });
  start();
}

/** Starts NATS with this run's users, or uses NATS_URL; resolves with its URL and the users' passwords. */
export async function startNats(root, source, state) {
  if (source.kind === 'url') {
    say(
      `using NATS at ${source.url.replace(/\/\/[^@/]*@/g, '//')} (services log in with the NATS_* variables you set)`,
    );
    return { url: source.url, passwords: undefined };
  }
  const port = process.env.NATS_PORT ? Number(process.env.NATS_PORT) : await freePort();
  // The users of infra/nats/accounts.conf, each with a password (plain base64url, so the printed
  // examples can be pasted into a shell); nats-server reads them from its environment.
  const { INFRA_NATS_USERS, infraPasswordEnvironment } = await import('@agentmesh/testkit');
  const passwords = Object.fromEntries(
    INFRA_NATS_USERS.map((user) => [
      user,
      state.remember(`nats password ${user}`, () => randomBytes(18).toString('base64url')),
    ]),
  );
  const passwordEnv = infraPasswordEnvironment(passwords);
  const env = { ...process.env, ...passwordEnv };
  const stdio = 'ignore';
  const dir = natsDir(state);
  if (source.kind === 'binary') {
    const version = serverVersion(spawnSync(source.path, ['--version'], { encoding: 'utf8' }).stdout);
    writeNatsConfig(root, dir, port, version);
    keepRunning('nats-server', dir, (onExit) =>
      spawnProcess(
        'nats-server',
        source.path,
        ['-c', join(dir, 'mesh.conf')],
        { stdio, env },
        { last: true, onExit },
      ),
    );
    say(`started ${source.path} with this run's users (config and JetStream store in ${dir})`);
  } else {
    const image = process.env.AGENTMESH_NATS_IMAGE ?? 'nats:2.10';
    const version = serverVersion(
      spawnSync(source.docker, ['run', '--rm', image, '--version'], { encoding: 'utf8' }).stdout,
    );
    writeNatsConfig(root, dir, port, version);
    const name = `agentmesh-nats-${randomBytes(4).toString('hex')}`;
    const remove = () => spawnSync(source.docker, ['rm', '-f', name], { stdio: 'ignore' });
    // Attached (not -d): the container stops when this `docker run` does (it passes SIGTERM on).
    keepRunning('the NATS container', dir, (onExit) => {
      remove();
      return spawnProcess(
        'NATS container',
        source.docker,
        [
          'run',
          '--rm',
          '--name',
          name,
          '--network',
          'host',
          '-v',
          `${dir}:${dir}`,
          ...Object.keys(passwordEnv).flatMap((variable) => ['-e', variable]),
          image,
          '-c',
          join(dir, 'mesh.conf'),
        ],
        { stdio, env },
        { last: true, onExit },
      );
    });
    finallyOnStop(remove);
    say(`started NATS container ${name} from ${image} with this run's users (JetStream store in ${dir})`);
  }
  await waitForPort(port, 15_000);
  return { url: `nats://127.0.0.1:${port}`, passwords };
}
