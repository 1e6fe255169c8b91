/**
 * The environment a script sees: the allow-listed host variables, the tool's declared variables, and
 * HOME/TMPDIR pointing at the run's scratch directory. Nothing else of the host's environment (its
 * secrets included) is passed on.
 */
import { InputError } from './errors.js';

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function scriptEnvironment(
  hostEnv: Readonly<Record<string, string | undefined>>,
  allowList: readonly string[],
  declared: Readonly<Record<string, string>> | undefined,
  scratchDir: string,
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of allowList) {
    const value = hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(declared ?? {})) {
    if (!VARIABLE_NAME.test(name)) throw new InputError(`"${name}" is not a valid environment variable name`);
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new InputError(`environment variable ${name} must be a string without NUL bytes`);
    }
    env[name] = value;
  }
  env['HOME'] = scratchDir;
  env['TMPDIR'] = scratchDir;
  return env;
}
