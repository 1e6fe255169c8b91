// Where npm start gets NATS from, decided before anything starts: NATS_URL when set, else a nats-server
// binary (PATH, then /usr/sbin where Debian's package puts it), else a Docker engine, else Debian's
// `nats-server` package installed with apt-get when this user is root or has passwordless sudo (said on
// stdout). When none of these can be had, a StartError says what to install or set.
import { spawnSync } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { say, StartError } from './output.mjs';

// Debian installs nats-server into /usr/sbin, which a non-root user's PATH often lacks.
const SBIN = ['/usr/sbin', '/usr/local/sbin'];

/** The path of executable `name` on PATH (then in `extraDirs`); undefined when there is none. */
export function findExecutable(name, extraDirs = []) {
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  for (const dir of dirs) {
    const path = join(dir, name);
    try {
      if (!statSync(path).isFile()) continue;
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return undefined;
}

function dockerEngine() {
  const docker = findExecutable('docker');
  if (!docker) return undefined;
  return spawnSync(docker, ['info'], { stdio: 'ignore', timeout: 20_000 }).status === 0 ? docker : undefined;
}

/** Installs Debian's nats-server with apt-get; its path, or the reason it could not. */
function installFromApt() {
  const aptGet = findExecutable('apt-get', SBIN);
  if (!aptGet) return { reason: 'this machine has no apt-get to install it with' };
  const root = process.getuid?.() === 0;
  const sudo = root ? undefined : findExecutable('sudo');
  if (!root && !(sudo && spawnSync(sudo, ['-n', 'true'], { stdio: 'ignore' }).status === 0)) {
    return { reason: "installing Debian's nats-server package needs root or passwordless sudo" };
  }
  say(
    `no NATS_URL, no nats-server binary and no Docker engine: installing Debian's nats-server package with apt-get${root ? '' : ' (sudo)'}`,
  );
  const run = (args) => {
    const command = root ? aptGet : sudo;
    const argv = root ? args : ['-n', 'env', 'DEBIAN_FRONTEND=noninteractive', aptGet, ...args];
    return spawnSync(command, argv, {
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    }).status;
  };
  const status = run(['update', '-q']) === 0 ? run(['install', '-y', '-q', 'nats-server']) : 'failed';
  const path = findExecutable('nats-server', SBIN);
  if (status !== 0) return { reason: `apt-get install nats-server failed (exit ${status})` };
  if (!path)
    return {
      reason: `apt-get installed nats-server, but no nats-server binary is on PATH or in ${SBIN.join(', ')}`,
    };
  say(`installed ${path}`);
  return { path };
}

/**
 * `{ kind: 'url', url }`, `{ kind: 'binary', path }` or `{ kind: 'docker', docker }`; throws StartError
 * saying what to install or set when there is no NATS to be had.
 */
export function natsSource() {
  if (process.env.NATS_URL) return { kind: 'url', url: process.env.NATS_URL };
  const binary = findExecutable('nats-server', SBIN);
  if (binary) return { kind: 'binary', path: binary };
  const docker = dockerEngine();
  if (docker) return { kind: 'docker', docker };
  const installed = installFromApt();
  if (installed.path) return { kind: 'binary', path: installed.path };
  throw new StartError(
    'the mesh needs a NATS server and none is at hand: NATS_URL is not set, there is no nats-server binary ' +
      `(looked on PATH and in ${SBIN.join(', ')}), no Docker engine answers \`docker info\`, and ` +
      `${installed.reason}. Install nats-server 2.10 or newer (Debian/Ubuntu: \`sudo apt-get install ` +
      'nats-server`; elsewhere a release from https://github.com/nats-io/nats-server/releases), or start a ' +
      'Docker engine, or set NATS_URL to a NATS server with JetStream (the services then log in with the ' +
      'NATS_USER/NATS_PASSWORD you set), and run npm start again.',
  );
}
