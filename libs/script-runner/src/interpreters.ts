/**
 * Chooses the interpreter for each language: the policy's command when given, otherwise the first
 * candidate on the host that the sandbox user can execute (python3 on PATH; the runner's own node, then
 * node on PATH; bun on PATH). A language with no usable interpreter is reported with the reason.
 *
 * The sandbox shows the system directories; an interpreter installed elsewhere brings its own
 * directories (`runtimePaths`: its `bin`, and `lib`/`lib64` beside it; npm's package) and is run by its
 * real path, which is where the sandbox shows it.
 */
import { access, realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ScriptLanguage } from '@agentmesh/protocol';
import { findAllOnPath, isReachableBy } from './executables.js';
import type { ResolvedPolicy, SandboxUser } from './policy.js';
import { installDirsOf, isSystemPath } from './sandbox-root.js';

export interface Interpreter {
  readonly command: string;
  /** Real paths outside the system directories the interpreter needs to see (read-only). */
  readonly runtimePaths: readonly string[];
}

export interface NodeInterpreter extends Interpreter {
  /** npm's CLI script, run with `command`; absent when none is reachable. */
  readonly npmCli: string | undefined;
}

export interface Interpreters {
  readonly python?: Interpreter;
  readonly nodejs?: NodeInterpreter;
  readonly bun?: Interpreter;
  /** Why a language has no interpreter. */
  readonly unavailable: Partial<Record<ScriptLanguage, string>>;
}

export async function detectInterpreters(
  policy: ResolvedPolicy,
  user: SandboxUser | undefined,
  ownNode: string,
): Promise<Interpreters> {
  const path = policy.hostEnv['PATH'];
  const configured = policy.languages;
  const unavailable: Partial<Record<ScriptLanguage, string>> = {};
  const candidates = async (given: string | undefined, defaults: () => Promise<string[]>) =>
    given === undefined ? defaults() : findAllOnPath(given, path);

  const choose = async (language: ScriptLanguage, list: string[], describe: string) => {
    for (const command of list) if (await isReachableBy(command, user, 'execute')) return command;
    unavailable[language] =
      list.length === 0
        ? `no ${describe} interpreter was found`
        : `no ${describe} interpreter the sandbox user (uid ${user?.uid}) can execute: ${list.join(', ')}`;
    return undefined;
  };

  const python = await choose(
    'python',
    await candidates(configured.python?.command, () => findAllOnPath('python3', path)),
    'python3',
  );
  const node = await choose(
    'nodejs',
    await candidates(configured.nodejs?.command, async () => [
      ownNode,
      ...(await findAllOnPath('node', path)),
    ]),
    'node',
  );
  const bun = await choose(
    'bun',
    await candidates(configured.bun?.command, () => findAllOnPath('bun', path)),
    'bun',
  );
  const nodeInterpreter = async (command: string): Promise<NodeInterpreter> => {
    const base = await located(command);
    const npmCli = await findNpmCli(command, configured.nodejs?.npmCli, user);
    // <package>/bin/npm-cli.js: the whole npm package.
    const npmPaths = npmCli === undefined || isSystemPath(npmCli) ? [] : [dirname(dirname(npmCli))];
    return { ...base, npmCli, runtimePaths: [...base.runtimePaths, ...npmPaths] };
  };
  return {
    ...(python === undefined ? {} : { python: await located(python) }),
    ...(node === undefined ? {} : { nodejs: await nodeInterpreter(node) }),
    ...(bun === undefined ? {} : { bun: await located(bun) }),
    unavailable,
  };
}

/** How to run `command` inside the sandbox, and what of the host it needs to see there. */
export async function located(command: string): Promise<Interpreter> {
  if (isSystemPath(command) && isSystemPath(await realpath(command))) return { command, runtimePaths: [] };
  const real = await realpath(command);
  const runtimePaths: string[] = [];
  for (const dir of installDirsOf(real)) {
    try {
      await access(dir);
    } catch {
      continue;
    }
    const realDir = await realpath(dir);
    if (!isSystemPath(realDir) && !runtimePaths.includes(realDir)) runtimePaths.push(realDir);
  }
  return { command: real, runtimePaths };
}

/** npm ships beside node: `<prefix>/bin/npm` links to `<prefix>/lib/node_modules/npm/bin/npm-cli.js`. */
const SYSTEM_NPM_CLIS = [
  '/usr/lib/node_modules/npm/bin/npm-cli.js',
  '/usr/local/lib/node_modules/npm/bin/npm-cli.js',
  '/usr/share/nodejs/npm/bin/npm-cli.js',
];

async function findNpmCli(
  node: string,
  configured: string | undefined,
  user: SandboxUser | undefined,
): Promise<string | undefined> {
  const realNode = await realpath(node);
  const candidates =
    configured === undefined
      ? [
          join(dirname(node), 'npm'),
          join(dirname(realNode), 'npm'),
          join(dirname(realNode), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
          // A node taken from a package (npm's `node` package ships the binary alone) has no npm beside
          // it: fall back to the system's npm, run by this node.
          ...SYSTEM_NPM_CLIS,
        ]
      : [configured];
  for (const candidate of candidates) {
    let real: string;
    try {
      real = await realpath(candidate);
    } catch {
      continue;
    }
    if (real.endsWith('.js') && (await isReachableBy(real, user, 'read'))) return real;
  }
  return undefined;
}
