#!/usr/bin/env node
// `npm start`: builds the packages and runs the whole local mesh until Ctrl-C. Runs on the Node.js first
// on PATH, Node 20 included (this file and what it imports statically use nothing newer); the mesh itself
// needs Node.js >= 22.12, so on an older Node the node@24 npm package is fetched into
// ~/.cache/agentmesh/node24 (as infra/setup-machine.sh does, reused when there) and this script runs
// again under it, as a child that stops when this process does.
// Before anything starts, it checks the ports it will listen on (HTTP_PORT, default 8080, for the
// gateway; NATS_PORT when set) and finds NATS: NATS_URL, else the nats-server binary (PATH, /usr/sbin),
// else a Docker engine (a container from $AGENTMESH_NATS_IMAGE), else Debian's nats-server package via
// apt-get when root or passwordless sudo allow it; otherwise it says what to install or set. Problems
// the user can fix are one `[mesh] error:` paragraph and exit status 1, never a stack trace.
// Then (start-mesh/mesh.mjs): the build (`turbo run build`; `--no-build` skips it), NATS with
// infra/nats/accounts.conf and passwords generated for this run (each service logs in as its own user;
// the provisioner creates the streams and buckets first), every service built in services/*, the
// gateway with an admin key generated for this run (printed) and no unauthenticated caller
// (TRUST_ACCOUNT_HEADERS stays off unless you set it). Without MODEL_BASE_URL also a clearly labelled
// DEMO model (the test kit's scripted OpenAI-compatible server, not an LLM), a demo company-lookup API,
// a demo agent and plugin, the demo model's credential for the whole demo account and an account API
// key; then one ready line per way in (start-mesh/doors.mjs) and each service's metrics URL. It links the
// agentmesh CLI into node_modules/.bin when npm install ran before the CLI was built, but prints it by
// absolute path: `npx agentmesh` outside the clone would run a registry's package of that name.
// `--data-dir DIR` (or AGENTMESH_DATA_DIR) keeps keys, the NATS store and registrations across restarts
// (start-mesh/data-dir.mjs); without it all is thrown away at stop. A dead nats-server is restarted.
// Nothing outlives it (start-mesh/process-tree.mjs): every process is in its process group and stops
// when it stops, on Ctrl-C or SIGTERM, when any service exits (a line names it), and when it is killed.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { say, sayError, StartError } from './start-mesh/output.mjs';
import { natsSource } from './start-mesh/nats-source.mjs';
import { assertPortsFree, portClaim } from './start-mesh/ports.mjs';
import { supportedNode } from './start-mesh/supported-node.mjs';

const script = fileURLToPath(import.meta.url);
const root = join(dirname(script), '..');
const args = process.argv.slice(2);

/** On an older Node: run this script under `node` and mirror it (signals in, exit status out). */
function runUnder(node) {
  const child = spawn(node, [script, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    // Its build and anything it starts find the same Node first on PATH.
    env: { ...process.env, PATH: `${dirname(node)}:${process.env.PATH ?? ''}` },
  });
  child.once('error', (error) => {
    sayError(`could not run the mesh on ${node}: ${error.message}`);
    process.exit(1);
  });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.once('exit', (code, signal) => {
    if (signal && signal !== 'SIGINT' && signal !== 'SIGTERM') {
      sayError(`the mesh on ${node} was killed by ${signal}`);
    }
    process.exit(code ?? 1);
  });
}

/**
 * node_modules/.bin/agentmesh, for `npm exec agentmesh` inside the clone: on a fresh clone `npm install`
 * ran before the CLI's file was built, so npm did not link it; `npm rebuild` links it now.
 */
async function linkCli(tree) {
  if (existsSync(join(root, 'node_modules', '.bin', 'agentmesh'))) return;
  if (!existsSync(join(root, 'libs', 'client', 'dist', 'cli', 'main.js'))) return;
  const npm = process.env.npm_execpath
    ? { command: process.execPath, args: [process.env.npm_execpath] }
    : { command: 'npm', args: [] };
  const rebuild = tree.spawnProcess(
    'npm rebuild',
    npm.command,
    [...npm.args, 'rebuild', '--ignore-scripts', '@agentmesh/client'],
    { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] },
    { oneShot: true },
  );
  const [code] = await tree.exitOf(rebuild);
  if (tree.isStopping()) throw new tree.StoppingError('stopping');
  if (code === 0) say('linked the agentmesh CLI into node_modules/.bin');
  else say('could not link the agentmesh CLI into node_modules/.bin (the printed lines do not need it)');
}

async function runHere(source) {
  const tree = await import('./start-mesh/process-tree.mjs');
  tree.stopOnSignalsAndErrors();
  // Started by an older Node's run of this script: stop when that process is gone, however it went.
  if (process.channel) {
    process.once('disconnect', () => void tree.stopAll(1, 'the start script that launched this one is gone'));
    process.channel.unref();
  }
  try {
    if (!args.includes('--no-build')) {
      say('building the packages (turbo run build)');
      const build = tree.spawnProcess(
        'the build',
        join(root, 'node_modules', '.bin', 'turbo'),
        ['run', 'build', '--output-logs=errors-only'],
        { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
        { oneShot: true },
      );
      const [code, signal] = await tree.exitOf(build);
      if (tree.isStopping()) return;
      if (code !== 0)
        throw new StartError(`the build failed (${signal ?? `exit ${code}`}); see its output above`);
    }
    const { dataDirOf } = await import('./start-mesh/data-dir.mjs');
    const dataDir = dataDirOf(args);
    await linkCli(tree);
    const { runMesh } = await import('./start-mesh/mesh.mjs');
    await runMesh({ root, natsSource: source, dataDir });
  } catch (error) {
    if (error instanceof tree.StoppingError || tree.isStopping()) return;
    void tree.stopAll(1, error);
  }
}

try {
  if (!existsSync(join(root, 'node_modules', '.bin', 'turbo'))) {
    throw new StartError('the dependencies are not installed: run `npm install` first, then `npm start`');
  }
  const host = process.env.HTTP_HOST || '127.0.0.1';
  await assertPortsFree([
    portClaim('HTTP_PORT', 8080, host, 'the gateway'),
    process.env.NATS_URL ? undefined : portClaim('NATS_PORT', undefined, '127.0.0.1', 'NATS'),
  ]);
  const source = natsSource();
  const node = supportedNode();
  if (node === process.execPath) await runHere(source);
  else runUnder(node);
} catch (error) {
  sayError(error);
  process.exit(1);
}
