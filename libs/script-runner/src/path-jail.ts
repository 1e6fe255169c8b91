/**
 * Keeps script paths inside the base directory: a path is accepted only when it is relative, stays
 * inside after normalisation, and still lands inside once every symlink (of the file and of its
 * directory) is resolved.
 */
import { realpath, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, relative, sep } from 'node:path';
import { InputError, SecurityError } from './errors.js';

export interface JailedScript {
  /** The script's real path (symlinks resolved). */
  readonly path: string;
  /** Its real directory: the script's `cwd`. */
  readonly dir: string;
}

/** True when `path` is `root` or lies below it. Both must already be normalised absolute paths. */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

export async function jailScriptPath(baseDir: string, scriptPath: string): Promise<JailedScript> {
  if (scriptPath.includes('\0')) throw new SecurityError('the script path contains a NUL byte');
  if (scriptPath.trim() === '') throw new SecurityError('the script path is empty');
  if (isAbsolute(scriptPath)) {
    throw new SecurityError(
      `the script path "${scriptPath}" is absolute; it must be relative to the base directory`,
    );
  }
  const normalised = normalize(scriptPath);
  if (normalised === '..' || normalised.startsWith(`..${sep}`)) {
    throw new SecurityError(`the script path "${scriptPath}" leaves the base directory`);
  }
  const realBase = await realpathOr(baseDir, () => {
    throw new SecurityError('the script base directory does not exist');
  });
  const joined = join(realBase, normalised);
  const outside = (): never => {
    throw new SecurityError(`the script path "${scriptPath}" resolves outside the base directory`);
  };
  const missing = (): never => {
    throw new InputError(`the script "${scriptPath}" does not exist`);
  };
  const realDir = await realpathOr(dirname(joined), missing);
  if (!isInside(realBase, realDir)) outside();
  const realScript = await realpathOr(joined, missing);
  if (!isInside(realBase, realScript)) outside();
  if (!(await stat(realScript)).isFile()) throw new InputError(`the script "${scriptPath}" is not a file`);
  return { path: realScript, dir: dirname(realScript) };
}

async function realpathOr(path: string, onMissing: () => never): Promise<string> {
  try {
    return await realpath(path);
  } catch (error) {
    if (isErrno(error, 'ENOENT') || isErrno(error, 'ENOTDIR')) onMissing();
    throw error;
  }
}

export function isErrno(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}
