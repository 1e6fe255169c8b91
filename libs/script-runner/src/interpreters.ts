/**
 * Chooses the interpreter for each language: the policy's command when given, otherwise the first
 * candidate on the host that the sandbox user can execute (python3 on PATH; the runner's own node, then
 * node on PATH; bun on PATH). A language with no usable interpreter is reported with the reason.
 */
import { realpath } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ScriptLanguage } from '@agentmesh/protocol';
import { findAllOnPath, isReachableBy } from './executables.js';
import type { ResolvedPolicy, SandboxUser } from './policy.js';

export interface Interpreter {
  readonly command: string;
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
  return {
    ...(python === undefined ? {} : { python: { command: python } }),
    ...(node === undefined
      ? {}
      : { nodejs: { command: node, npmCli: await findNpmCli(node, configured.nodejs?.npmCli, user) } }),
    ...(bun === undefined ? {} : { bun: { command: bun } }),
    unavailable,
  };
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
