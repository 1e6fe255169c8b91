/**
 * Dependency environments: a `requirements.txt`/`pyproject.toml` beside a Python script gets its own
 * virtual environment, a `package.json` beside a Node/Bun script its own `node_modules`. Each is built
 * once per content hash (script directory, manifests, lock files, interpreter) under `<cacheDir>/envs/` and reused; a
 * marker file written last says the build finished. Concurrent first runs in this process share one
 * build. (One runner per cache directory: other processes are not coordinated with.)
 *
 * Builds run in the sandbox as the sandbox user, writing only into the environment directory. The
 * script's directory is overlaid with a writable layer inside the environment, so installers that write
 * next to the manifest (`node_modules`, in-tree builds) never touch the tool's own files and relative
 * references (`file:./dep`, `--find-links ./wheels`) resolve as the author meant. At run time a Node
 * script sees that layer's `node_modules` through a read-only overlay on its directory; a Python script
 * simply runs with the venv's interpreter. npm runs with `--ignore-scripts`.
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFile, mkdir, rm, writeFile, access, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import type { ScriptLanguage } from '@agentmesh/protocol';
import { DependencyError } from './errors.js';
import type { ProcessOutcome } from './process-run.js';
import type { DirectoryOverlay, SandboxExit } from './sandbox.js';
import type { SandboxUser } from './policy.js';
import { chownTree } from './scratch.js';

const MARKER = '.agentmesh-env.json';
const PYTHON_MANIFESTS = ['requirements.txt', 'pyproject.toml'];
const NODE_MANIFESTS = ['package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'bun.lock', 'bun.lockb'];
/** overlayfs option syntax gives these characters meaning. */
const OVERLAY_UNSAFE = /[,:\\]/;

export interface BuildStep {
  readonly argv: readonly string[];
  readonly cwd: string;
  readonly writablePaths: readonly string[];
  readonly overlay?: DirectoryOverlay;
  readonly network: boolean;
}

export interface DependencyEnvironmentOptions {
  readonly cacheDir: string;
  /** Owner of the build directories (the sandbox user), when the runner is root. */
  readonly owner: SandboxUser | undefined;
  /** Whether the namespace sandbox (needed for the overlay) is available. */
  readonly namespaces: boolean;
  readonly network: boolean;
  readonly runStep: (step: BuildStep) => Promise<StepOutcome>;
}

export interface StepOutcome {
  readonly outcome: ProcessOutcome;
  readonly exit: SandboxExit;
  /** The run's processes together went past its cgroup's memory limit and were killed. */
  readonly memoryLimitExceeded?: boolean;
}

export interface Toolchain {
  readonly command: string;
  readonly npmCli?: string | undefined;
}

/** What a run needs from its environment. */
export interface PreparedEnvironment {
  /** Interpreter to use instead of the language's (the venv's python). */
  readonly interpreter?: string;
  /** Read-only layer to lay over the script's directory (holds `node_modules`). */
  readonly overlayLayer?: string;
  /** What of the environment the run must see read-only (the venv). */
  readonly runtimePaths: readonly string[];
  readonly log: string;
}

interface Marker {
  readonly hash: string;
  readonly buildId: string;
  readonly builtAt: string;
}

export class DependencyEnvironments {
  private readonly building = new Map<string, Promise<void>>();

  constructor(private readonly options: DependencyEnvironmentOptions) {}

  /** `undefined` when the script has no manifest beside it. */
  async prepare(
    language: ScriptLanguage,
    scriptDir: string,
    toolchain: Toolchain,
  ): Promise<PreparedEnvironment | undefined> {
    const manifests = await presentFiles(
      scriptDir,
      language === 'python' ? PYTHON_MANIFESTS : NODE_MANIFESTS,
    );
    if (language !== 'python' && !manifests.includes('package.json')) return undefined;
    if (manifests.length === 0) return undefined;
    if (!this.options.namespaces) {
      throw new DependencyError('dependency environments need the namespace sandbox, which this host lacks');
    }
    if (OVERLAY_UNSAFE.test(scriptDir) || OVERLAY_UNSAFE.test(this.options.cacheDir)) {
      throw new DependencyError(
        'paths of scripts with dependencies and of the cache must not contain , : or \\',
      );
    }
    const hash = await contentHash(language, scriptDir, manifests, toolchain.command);
    // Real path: the sandbox shows it at the same path, which must not pass through a symlink.
    await mkdir(this.options.cacheDir, { recursive: true });
    const envDir = join(await realpath(this.options.cacheDir), 'envs', `${language}-${hash.slice(0, 32)}`);
    let built = false;
    if ((await readMarker(envDir))?.hash !== hash) {
      let build = this.building.get(envDir);
      if (build === undefined) {
        built = true;
        build = this.build(language, scriptDir, manifests, toolchain, envDir, hash).finally(() =>
          this.building.delete(envDir),
        );
        this.building.set(envDir, build);
      }
      await build;
    }
    const log = `dependency environment ${built ? 'built' : 'reused'}: ${envDir}`;
    return language === 'python'
      ? { interpreter: join(envDir, 'venv', 'bin', 'python'), runtimePaths: [join(envDir, 'venv')], log }
      : { overlayLayer: join(envDir, 'layer', 'upper'), runtimePaths: [], log };
  }

  private async build(
    language: ScriptLanguage,
    scriptDir: string,
    manifests: readonly string[],
    toolchain: Toolchain,
    envDir: string,
    hash: string,
  ): Promise<void> {
    await rm(envDir, { recursive: true, force: true });
    const upperDir = join(envDir, 'layer', 'upper');
    const workDir = join(envDir, 'layer', 'work');
    await mkdir(join(this.options.cacheDir, 'envs'), { recursive: true, mode: 0o755 });
    await mkdir(upperDir, { recursive: true, mode: 0o755 });
    await mkdir(workDir, { mode: 0o755 });
    await chownTree([envDir, join(envDir, 'layer'), upperDir, workDir], this.options.owner);
    const overlay: DirectoryOverlay = {
      target: scriptDir,
      lowerDirs: [scriptDir],
      upper: { upperDir, workDir },
    };
    const step = (argv: readonly string[], network: boolean) =>
      this.runStep({ argv, cwd: scriptDir, writablePaths: [envDir], overlay, network });
    try {
      if (language === 'python') {
        const python = join(envDir, 'venv', 'bin', 'python');
        await step([toolchain.command, '-m', 'venv', join(envDir, 'venv')], false);
        const target = manifests.includes('requirements.txt') ? ['-r', 'requirements.txt'] : ['.'];
        const pip = [python, '-m', 'pip', 'install', '--disable-pip-version-check', '--no-input'];
        await step([...pip, ...target], this.options.network);
      } else {
        await step(nodeInstallCommand(language, manifests, toolchain), this.options.network);
      }
      const marker: Marker = { hash, buildId: randomUUID(), builtAt: new Date().toISOString() };
      await writeFile(join(envDir, MARKER), JSON.stringify(marker));
    } catch (error) {
      await rm(envDir, { recursive: true, force: true });
      throw error;
    }
  }

  private async runStep(step: BuildStep): Promise<void> {
    const { outcome, exit } = await this.options.runStep(step);
    const what = step.argv.slice(0, 4).join(' ');
    if (outcome.timedOut) throw new DependencyError(`installing dependencies timed out (${what})`);
    if (exit.kind === 'exit' && exit.exitCode === 0 && outcome.spawnError === undefined) return;
    const reason = exit.kind === 'setup-error' ? exit.message : '';
    throw new DependencyError(`installing dependencies failed (${what})`, {
      details: [reason, outcome.stderr.trim() || outcome.stdout.toString('utf8').trim()]
        .filter(Boolean)
        .join('\n'),
      ...(exit.kind === 'exit' ? { exit } : {}),
      ...(outcome.spawnError === undefined ? {} : { cause: outcome.spawnError }),
    });
  }
}

function nodeInstallCommand(language: ScriptLanguage, manifests: readonly string[], toolchain: Toolchain) {
  if (language === 'bun') {
    const locked = manifests.includes('bun.lock') || manifests.includes('bun.lockb');
    return [toolchain.command, 'install', ...(locked ? ['--frozen-lockfile'] : [])];
  }
  if (toolchain.npmCli === undefined)
    throw new DependencyError('npm was not found next to the node interpreter');
  const locked = manifests.includes('package-lock.json') || manifests.includes('npm-shrinkwrap.json');
  return [
    toolchain.command,
    toolchain.npmCli,
    locked ? 'ci' : 'install',
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
    '--update-notifier=false',
  ];
}

async function presentFiles(dir: string, names: readonly string[]): Promise<string[]> {
  const present: string[] = [];
  for (const name of names) {
    try {
      await access(join(dir, name));
      present.push(name);
    } catch {
      // absent
    }
  }
  return present;
}

async function contentHash(
  language: ScriptLanguage,
  dir: string,
  manifests: readonly string[],
  interpreter: string,
): Promise<string> {
  const hash = createHash('sha256');
  // The directory is part of it: relative references in manifests (`file:./dep`) resolve against it.
  hash.update(`${language}\0${await realpath(interpreter)}\0${dir}\0`);
  for (const name of manifests) {
    hash.update(`${name}\0`);
    hash.update(await readFile(join(dir, name)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** The marker of a finished build, or `undefined` (never built, or a build that died half-way). */
export async function readMarker(envDir: string): Promise<Marker | undefined> {
  try {
    const parsed: unknown = JSON.parse(await readFile(join(envDir, MARKER), 'utf8'));
    return typeof parsed === 'object' && parsed !== null && 'hash' in parsed ? (parsed as Marker) : undefined;
  } catch {
    return undefined;
  }
}
