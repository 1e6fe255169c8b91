// Where a development mesh keeps what must outlive a stop: `npm start -- --data-dir DIR` or
// AGENTMESH_DATA_DIR=DIR. DIR holds the NATS config and JetStream store (nats/), so agents, tools,
// credentials, API keys and tasks stay, and state.json (mode 0600) with every generated secret the
// store depends on: the admin and account keys, the NATS users' passwords, the credentials master key
// and the vault key pair (a new master key could not open the stored credentials). Without it,
// everything lives in a temporary directory and in memory, and is thrown away at stop.
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { say, StartError } from './output.mjs';
import { finallyOnStop } from './process-tree.mjs';

const STATE_FILE = 'state.json';
const OWNER_FILE = 'start-mesh.pid';

/** The data directory asked for (`--data-dir DIR`, `--data-dir=DIR`, else AGENTMESH_DATA_DIR), absolute. */
export function dataDirOf(args, env = process.env) {
  const index = args.indexOf('--data-dir');
  if (index >= 0) {
    const dir = args[index + 1];
    if (!dir || dir.startsWith('--')) throw new StartError('--data-dir needs a directory: --data-dir DIR');
    return resolve(dir);
  }
  const inline = args.find((arg) => arg.startsWith('--data-dir='));
  if (inline) return resolve(inline.slice('--data-dir='.length));
  return env.AGENTMESH_DATA_DIR ? resolve(env.AGENTMESH_DATA_DIR) : undefined;
}

/** One mesh at a time per data directory: two NATS servers on one store would corrupt it. */
function claim(dir) {
  const ownerFile = join(dir, OWNER_FILE);
  if (existsSync(ownerFile)) {
    const owner = Number(readFileSync(ownerFile, 'utf8'));
    try {
      if (owner && owner !== process.pid) {
        process.kill(owner, 0);
        throw new StartError(
          `${dir} is in use by another npm start (pid ${owner}): stop it, or pick another --data-dir`,
        );
      }
    } catch (error) {
      if (error instanceof StartError) throw error;
      // ESRCH: that run is gone (killed); the directory is free.
    }
  }
  writeFileSync(ownerFile, `${process.pid}\n`);
  finallyOnStop(() => rmSync(ownerFile, { force: true }));
}

/**
 * The run's state: `remember(name, make)` answers what an earlier run stored under `name`, else makes
 * it (and stores it when there is a data directory). `kept` says whether an earlier run left state.
 */
export function openState(dir) {
  if (!dir) {
    say(
      'no data directory: keys, NATS store, agents, credentials and tasks are thrown away at stop ' +
        '(`npm start -- --data-dir DIR` or AGENTMESH_DATA_DIR=DIR keeps them)',
    );
    return { dir: undefined, kept: false, remember: (_name, make) => make() };
  }
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  claim(dir);
  const file = join(dir, STATE_FILE);
  let state = {};
  if (existsSync(file)) {
    try {
      state = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new StartError(`${file} is not readable JSON (${error.message}): fix or remove it`);
    }
  }
  const kept = Object.keys(state).length > 0;
  say(
    kept
      ? `data directory ${dir}: reusing the keys, NATS store, agents, credentials and tasks of an earlier run`
      : `data directory ${dir}: keys, NATS store, agents, credentials and tasks are kept there across restarts`,
  );
  const remember = (name, make) => {
    if (state[name] !== undefined) return state[name];
    const value = make();
    state = { ...state, [name]: value };
    writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
    return value;
  };
  return { dir, kept, remember };
}
