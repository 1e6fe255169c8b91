#!/usr/bin/env node
// Runs the whole local mesh: NATS (the NATS_URL given, else the machine's nats-server binary with
// JetStream in a temporary store, else a container from $AGENTMESH_NATS_IMAGE), then every service
// built in services/*. Ctrl-C stops the services (each drains) and then NATS.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const services = [];
const cleanups = [];

function say(message) {
  process.stdout.write(`[mesh] ${message}\n`);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function waitForPort(port, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (Date.now() > deadline) reject(new Error(`nothing listens on 127.0.0.1:${port}`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

async function startNats() {
  if (process.env.NATS_URL) {
    say(`using NATS at ${process.env.NATS_URL}`);
    return process.env.NATS_URL;
  }
  const port = await freePort();
  if (onPath('nats-server')) {
    const store = mkdtempSync(join(tmpdir(), 'agentmesh-nats-'));
    const nats = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', store], {
      stdio: 'ignore',
    });
    cleanups.push(() => {
      nats.kill('SIGTERM');
      rmSync(store, { recursive: true, force: true });
    });
    say(`started nats-server (JetStream store ${store})`);
  } else if (onPath('docker') && spawnSync('docker', ['info'], { stdio: 'ignore' }).status === 0) {
    const image = process.env.AGENTMESH_NATS_IMAGE ?? 'nats:2.10';
    const run = spawnSync(
      'docker',
      ['run', '-d', '--rm', '--network', 'host', image, '-a', '127.0.0.1', '-p', String(port), '-js'],
      {
        encoding: 'utf8',
      },
    );
    if (run.status !== 0) throw new Error(`docker run failed: ${run.stderr}`);
    const id = run.stdout.trim();
    cleanups.push(() => spawnSync('docker', ['rm', '-f', id], { stdio: 'ignore' }));
    say(`started NATS container ${id.slice(0, 12)} from ${image}`);
  } else {
    throw new Error(
      'no NATS: set NATS_URL, install nats-server, or run a Docker engine (see infra/setup-machine.sh)',
    );
  }
  await waitForPort(port, 15_000);
  return `nats://127.0.0.1:${port}`;
}

function startService(name, natsUrl) {
  const entry = join(root, 'services', name, 'dist', 'index.js');
  const child = spawn(process.execPath, [entry], {
    env: { ...process.env, NATS_URL: natsUrl },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  child.on('exit', (code, signal) => {
    if (!stopping) say(`${name} exited (code ${code}, signal ${signal})`);
  });
  services.push(child);
}

let stopping = false;
async function stopAll() {
  if (stopping) return;
  stopping = true;
  say('stopping');
  // Services first, so that each can drain its NATS connection; NATS last.
  await Promise.all(
    services.map(
      (child) =>
        new Promise((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', resolve);
          child.kill('SIGTERM');
        }),
    ),
  );
  for (const cleanup of cleanups) cleanup();
  process.exit(0);
}
process.on('SIGINT', stopAll);
process.on('SIGTERM', stopAll);

const natsUrl = await startNats();
const names = readdirSync(join(root, 'services')).filter((name) =>
  existsSync(join(root, 'services', name, 'dist', 'index.js')),
);
for (const name of names) startService(name, natsUrl);
say(`NATS at ${natsUrl}; services: ${names.join(', ')}`);
say('press Ctrl-C to stop');
