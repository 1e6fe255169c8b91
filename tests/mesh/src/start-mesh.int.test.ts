/**
 * `npm start` (scripts/start-mesh.mjs) as a newcomer runs it, on the built services and this machine's
 * nats-server binary: it comes up, and however it is stopped — SIGINT to npm alone, SIGTERM to the start
 * script, one service killed, the start script killed — no process of its tree survives (checked in
 * /proc by process group and by a marker variable every process inherits). A port in use and a missing
 * NATS are one clear error before anything starts; on a Node 20 first on PATH it fetches (here: reuses)
 * Node 24 and the demo task completes; a service started alone on Node 20 says what Node it needs.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import {
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { findFreePort, waitFor } from '@agentmesh/testkit';
import { connect } from '@nats-io/transport-node';
import { afterEach, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const script = fileURLToPath(new URL('../../../scripts/start-mesh.mjs', import.meta.url));
const require = createRequire(import.meta.url);
const SERVICE_ENTRIES = {
  gateway: require.resolve('@agentmesh/gateway'),
  assembler: require.resolve('@agentmesh/assembler'),
  executor: require.resolve('@agentmesh/executor'),
  recall: require.resolve('@agentmesh/recall'),
  provisioner: require.resolve('@agentmesh/gateway/dist/provision.js'),
};
const MARKER = 'AGENTMESH_START_MESH_TEST_RUN';
// A Node.js older than the services support, as a newcomer's machine has first on PATH.
const OLD_NODE = '/usr/bin/node';
const oldNodeVersion = existsSync(OLD_NODE)
  ? spawnSync(OLD_NODE, ['--version'], { encoding: 'utf8' }).stdout.trim()
  : '';
const hasOldNode = /^v(1\d|2[01]|22\.(\d|1[01]))\./.test(oldNodeVersion);

interface Run {
  child: ChildProcess;
  marker: string;
  gatewayUrl: string;
  output(): string;
  exit: Promise<[number | null, NodeJS.Signals | null]>;
}

const runs: Run[] = [];

interface StartOptions {
  /** `npm start -- --no-build` (as README says, minus the build the test pipeline did) or the script alone. */
  via: 'npm' | 'node';
  env?: Record<string, string>;
  /** Prepended to PATH (e.g. the directory of an old Node). */
  pathFirst?: string;
  /** Run through `unshare`, with these files hidden (bind-mounted over by /dev/null). */
  hide?: string[];
}

async function start(options: StartOptions): Promise<Run> {
  const marker = randomUUID();
  const port = await findFreePort();
  const env: NodeJS.ProcessEnv = { ...process.env, HTTP_PORT: String(port), [MARKER]: marker };
  // Nothing of this shell's NATS or gateway settings: the script's own defaults are under test.
  for (const name of [
    'NATS_URL',
    'NATS_USER',
    'NATS_PASSWORD',
    'NATS_PORT',
    'TRUST_ACCOUNT_HEADERS',
    'ADMIN_API_KEYS',
    'MODEL_BASE_URL',
  ])
    delete env[name];
  Object.assign(env, options.env);
  if (options.pathFirst) env.PATH = `${options.pathFirst}:${env.PATH ?? ''}`;
  let [command, args] =
    options.via === 'npm'
      ? ['npm', ['start', '--', '--no-build']]
      : [process.execPath, [script, '--no-build']];
  if (options.hide) {
    const mounts = options.hide.map((file) => `mount --bind /dev/null ${file}`).join(' && ');
    args = [
      '--mount',
      '--propagation',
      'private',
      '--',
      'sh',
      '-c',
      `${mounts} && exec "$0" "$@"`,
      command,
      ...args,
    ];
    command = 'unshare';
  }
  // Its own process group, as a shell job is: the group is what must be empty afterwards.
  const child = spawn(command, args, { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (code, signal) => resolve([code, signal])),
  );
  const run: Run = { child, marker, gatewayUrl: `http://127.0.0.1:${port}`, output: () => output, exit };
  runs.push(run);
  return run;
}

async function ready(run: Run): Promise<void> {
  let exited = false;
  void run.exit.then(() => (exited = true));
  await waitFor(() => exited || run.output().includes('press Ctrl-C to stop'), {
    timeoutMs: 60_000,
    description: `npm start to come up; output so far:\n${run.output()}`,
  });
  if (exited) throw new Error(`npm start exited before it was up:\n${run.output()}`);
}

interface TreeProcess {
  pid: number;
  ppid: number;
  cmdline: string;
}

/** Live processes of the run's tree: in its process group, or carrying its marker variable. */
function treeOf(run: Run): TreeProcess[] {
  const found: TreeProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (state === 'Z') continue; // exited, only not yet reaped
      const environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      if (Number(pgid) === run.child.pid || environ.includes(`${MARKER}=${run.marker}\0`)) {
        const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
        found.push({ pid: Number(entry), ppid: Number(ppid), cmdline });
      }
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

function member(run: Run, pattern: RegExp): TreeProcess {
  const found = treeOf(run).find(({ cmdline }) => pattern.test(cmdline));
  if (!found) throw new Error(`no process matching ${pattern} in ${JSON.stringify(treeOf(run), null, 1)}`);
  return found;
}

/** The tree is really there: NATS, each service, the start script (so an empty tree later means something). */
function expectFullTree(run: Run): void {
  const cmdlines = treeOf(run).map(({ cmdline }) => cmdline);
  for (const pattern of [
    /nats-server -c /,
    /services\/gateway\/dist\/index\.js/,
    /services\/assembler\/dist\/index\.js/,
    /services\/executor\/dist\/index\.js/,
    /scripts\/start-mesh\.mjs/,
  ])
    expect(
      cmdlines.some((cmdline) => pattern.test(cmdline)),
      `${pattern} in ${cmdlines.join('\n')}`,
    ).toBe(true);
}

async function expectNothingLeft(run: Run): Promise<void> {
  await waitFor(() => treeOf(run).length === 0, {
    timeoutMs: 40_000,
    description: `every process of the run to be gone; left: ${JSON.stringify(treeOf(run))}`,
  });
}

/**
 * Does what the printed `nats` CLI lines do, with nats.js (the nats CLI is not installed here): the tenant
 * subscribes to the printed subject, then the upstream sends the printed submission. Resolves with the
 * events the subscription got, up to the terminal one.
 */
async function runPrintedNatsCoreHint(
  run: Run,
): Promise<Array<{ seq: number; type: string; data: unknown }>> {
  const output = run.output();
  const sub = /^ {2}nats -s (\S+) --user (\S+) --password '([^']*)' sub '([^']+)'$/m.exec(output);
  const req =
    /^ {2}nats -s (\S+) --user (\S+) --password '([^']*)' --inbox-prefix (\S+) \\\n {4}req (\S+) '(.*)'$/m.exec(
      output,
    );
  expect(sub, 'the printed nats sub line').not.toBeNull();
  expect(req, 'the printed nats req lines').not.toBeNull();
  const [, subUrl, subUser, subPassword, subject] = sub!;
  const [, reqUrl, reqUser, reqPassword, inboxPrefix, submitSubject, payload] = req!;
  const tenant = await connect({ servers: subUrl!, user: subUser!, pass: subPassword! });
  const upstream = await connect({
    servers: reqUrl!,
    user: reqUser!,
    pass: reqPassword!,
    inboxPrefix: inboxPrefix!,
  });
  try {
    const events: Array<{ seq: number; type: string; data: unknown }> = [];
    tenant.subscribe(subject!, { callback: (_error, msg) => void events.push(msg.json()) });
    await tenant.flush();
    const reply = (await upstream.request(submitSubject!, payload!, { timeout: 10_000 })).json<{
      trace_id?: string;
    }>();
    expect(subject).toBe(`mesh.events.acme.${reply.trace_id}`);
    await waitFor(() => events.some((event) => event.type === 'done' || event.type === 'error'), {
      timeoutMs: 15_000,
      description: 'the terminal event on the printed subject',
    });
    return events;
  } finally {
    await Promise.allSettled([tenant.close(), upstream.close()]);
  }
}

afterEach(() => {
  // A failed test must not leave its mesh running for the next one.
  for (const run of runs.splice(0)) {
    for (const { pid } of treeOf(run)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
});

describe('npm start stops with nothing left behind', () => {
  it('when SIGINT reaches only the npm process (not its group), every process of the mesh stops and npm exits', async () => {
    const run = await start({ via: 'npm' });
    await ready(run);
    expectFullTree(run);
    process.kill(run.child.pid!, 'SIGINT');
    await run.exit;
    await expectNothingLeft(run);
    expect(run.output()).toContain('[mesh] SIGINT received');
    expect(run.output()).toContain('[mesh] stopped');
  });

  it('when the start script gets SIGTERM, it stops the services and NATS and exits 0 (and it linked the CLI it prints, whose nats CLI lines get the whole demo task)', async () => {
    // As on a fresh clone, where `npm install` ran before the CLI was built and could not link it.
    const cliLink = join(root, 'node_modules', '.bin', 'agentmesh');
    const target = '../@agentmesh/client/dist/cli/main.js';
    rmSync(cliLink, { force: true });
    let run: Run;
    let linked: string | undefined;
    try {
      run = await start({ via: 'node' });
      await ready(run);
      linked = readlinkSync(cliLink);
    } finally {
      if (linked === undefined) {
        rmSync(cliLink, { force: true });
        symlinkSync(target, cliLink);
      }
    }
    expect(linked).toBe(target);
    expect(run.output()).toContain('[mesh] linked the agentmesh CLI into node_modules/.bin');
    // The printed NATS hint loses nothing, though the demo task ends ~40 ms after the submit's reply: the
    // tenant subscribes first to the trace_id the submission then names.
    const events = await runPrintedNatsCoreHint(run);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    expect(events.at(-1)?.type).toBe('done');
    expect(JSON.stringify(events.at(-1)?.data)).toContain('ByteDance Ltd.');
    expectFullTree(run);
    run.child.kill('SIGTERM');
    const [code] = await run.exit;
    expect(code).toBe(0);
    await expectNothingLeft(run);
  });

  it('when one service is killed, the mesh stops with a line naming it and the start script exits 1', async () => {
    const run = await start({ via: 'node' });
    await ready(run);
    expectFullTree(run);
    process.kill(member(run, /services\/executor\/dist\/index\.js/).pid, 'SIGKILL');
    const [code] = await run.exit;
    expect(code).toBe(1);
    expect(run.output()).toMatch(/\[mesh\] error: executor exited \(killed by SIGKILL\): stopping the mesh/);
    await expectNothingLeft(run);
  });

  it('when the start script is killed (SIGKILL), its services and NATS notice and stop by themselves, and the next run removes its NATS directory', async () => {
    const run = await start({ via: 'node' });
    await ready(run);
    expectFullTree(run);
    const natsDir = /JetStream store in (\S+)\)/.exec(run.output())?.[1];
    expect(natsDir && existsSync(natsDir)).toBe(true);
    run.child.kill('SIGKILL');
    await run.exit;
    await expectNothingLeft(run);
    // Killed, it could not remove its NATS config and store; the next run does.
    expect(existsSync(natsDir!)).toBe(true);
    const next = await start({ via: 'node' });
    await ready(next);
    expect(existsSync(natsDir!)).toBe(false);
    next.child.kill('SIGTERM');
    await next.exit;
    await expectNothingLeft(next);
  });
});

describe('npm start refuses clearly before starting anything', () => {
  let holder: Server | undefined;
  afterEach(async () => {
    await new Promise((resolve) => (holder ? holder.close(resolve) : resolve(undefined)));
    holder = undefined;
  });

  const hold = async (): Promise<number> => {
    const port = await findFreePort();
    holder = createServer();
    await new Promise<void>((resolve) => holder!.listen(port, '127.0.0.1', resolve));
    return port;
  };

  it.each(['HTTP_PORT', 'NATS_PORT'])(
    'when the port in %s is in use, it names the port and the variable, without a stack, and starts nothing',
    async (variable) => {
      const port = await hold();
      const run = await start({ via: 'node', env: { [variable]: String(port) } });
      const [code] = await run.exit;
      expect(code).toBe(1);
      expect(run.output()).toMatch(new RegExp(`\\[mesh\\] error: port ${port} \\(.*\\) is in use`));
      expect(run.output()).toContain(`set ${variable} to a free port`);
      expect(run.output()).not.toMatch(/\n\s+at /);
      expect(run.output()).not.toContain('started');
      expect(treeOf(run)).toEqual([]);
    },
  );

  const canHide = process.getuid?.() === 0 && existsSync('/usr/bin/unshare');
  it.skipIf(!canHide)(
    'when there is no NATS_URL, no nats-server, no Docker engine and no apt-get, it says what to install or set',
    async () => {
      const hidden = [
        '/usr/sbin/nats-server',
        '/usr/bin/apt-get',
        '/usr/bin/docker',
        '/usr/local/bin/docker',
      ];
      const run = await start({
        via: 'node',
        env: { PATH: `${dirname(process.execPath)}:/usr/bin:/usr/sbin` },
        hide: hidden.filter((file) => existsSync(file)),
      });
      const [code] = await run.exit;
      expect(code).toBe(1);
      expect(run.output()).toContain('[mesh] error: the mesh needs a NATS server');
      expect(run.output()).toContain('sudo apt-get install nats-server');
      expect(run.output()).toContain('NATS_URL');
      expect(run.output()).not.toMatch(/\n\s+at /);
    },
  );
});

describe.skipIf(!hasOldNode)(`on a Node.js older than 22.12 first on PATH (${oldNodeVersion})`, () => {
  it('npm start runs the mesh on Node 24 from the cache, the demo task completes, and Ctrl-C to npm leaves nothing', async () => {
    const run = await start({ via: 'npm', pathFirst: dirname(OLD_NODE) });
    await ready(run);
    expectFullTree(run);
    expect(run.output()).toMatch(
      /Node\.js v\d+\.\d+\.\d+ is older than 22\.12: running the mesh on Node\.js v2[4-9]/,
    );
    // The services run on the fetched Node, not the old one.
    expect(member(run, /services\/gateway\/dist\/index\.js/).cmdline).not.toContain(OLD_NODE);
    const adminKey = /admin key for this run[^:]*: (\S+)/.exec(run.output())?.[1];
    const headers = { authorization: `Bearer ${adminKey}`, 'x-account-id': 'acme' };
    const submitted = await fetch(`${run.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body: JSON.stringify({
        workflow_id: 'demo_agent',
        user_id: 'demo-user',
        messages: [{ role: 'user', content: 'Tell me about ByteDance' }],
      }),
    });
    expect(submitted.status).toBe(202);
    const { trace_id } = (await submitted.json()) as { trace_id: string };
    const events = await (await fetch(`${run.gatewayUrl}/v1/tasks/${trace_id}/events`, { headers })).text();
    expect(events).toMatch(/event: done/);
    expect(events).toContain('ByteDance Ltd.');
    // The demo credential is no word of the answer, so nothing of it is redacted.
    expect(events).toContain('[DEMO MODEL]');
    expect(events).not.toContain('REDACTED');
    process.kill(run.child.pid!, 'SIGINT');
    await run.exit;
    await expectNothingLeft(run);
  });

  it('when the start script on the old Node is killed (SIGKILL), the mesh it runs on Node 24 stops by itself', async () => {
    const run = await start({ via: 'npm', pathFirst: dirname(OLD_NODE) });
    await ready(run);
    expectFullTree(run);
    const scripts = treeOf(run).filter(({ cmdline }) => /scripts\/start-mesh\.mjs/.test(cmdline));
    // npm's child, on the old Node; the other one is its child on Node 24.
    const launcher = scripts.find(({ ppid }) => ppid === run.child.pid);
    expect(scripts).toHaveLength(2);
    expect(realpathSync(`/proc/${launcher!.pid}/exe`)).toBe(realpathSync(OLD_NODE));
    process.kill(launcher!.pid, 'SIGKILL');
    await run.exit;
    await expectNothingLeft(run);
    expect(run.output()).toContain('[mesh] error: the start script that launched this one is gone');
  });

  it.each(Object.entries(SERVICE_ENTRIES))(
    'the %s started alone on it exits 1 with one line naming the Node it needs, not a stack trace',
    (_name, entry) => {
      const result = spawnSync(OLD_NODE, [entry], { encoding: 'utf8', env: { PATH: process.env.PATH } });
      expect(result.status).toBe(1);
      expect(result.stderr.trim()).toBe(
        `${entry} needs Node.js >= 22.12.0 and was started on Node.js ${oldNodeVersion.slice(1)}. ` +
          '`npm start` fetches a supported Node by itself; to run a service on its own, put Node.js 22.12 or ' +
          'newer first on PATH (e.g. `source infra/setup-machine.sh`).',
      );
    },
  );
});
