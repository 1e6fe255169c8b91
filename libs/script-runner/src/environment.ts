/**
 * The environment a script sees: the allow-listed host variables, the tool's declared variables, HOME and
 * TMPDIR pointing at the run's scratch directory and, when network was granted, the proxy variables.
 * Nothing else of the host's environment (its secrets included) is passed on.
 *
 * Variables that change what a program loads or runs before its own code (the dynamic loader's, glibc's
 * unsecure set, the interpreters' option and module path variables, shell start-up files) are refused
 * wherever they come from: the runner's allow-list, a tool's declared env or `run({env})`. The sandbox
 * applies the environment only after privileges are dropped, so this is a second line, not the only
 * one; it also keeps a tool from quietly changing how the interpreter behaves for the operator.
 */
import { InputError, SecurityError } from './errors.js';

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** glibc's unsecure variables (sysdeps/generic/unsecvars.h) and the other loaders' equivalents. */
const REFUSED_NAMES = new Set([
  'GCONV_PATH',
  'GETCONF_DIR',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'LOCALDOMAIN',
  'LOCPATH',
  'MALLOC_TRACE',
  'NIS_PATH',
  'NLSPATH',
  'RESOLV_HOST_CONF',
  'RES_OPTIONS',
  'TZDIR',
  // Shells read these files at start-up; the scripts' own subprocesses may be shells.
  'BASH_ENV',
  'ENV',
  'PERL5LIB',
  'PERL5OPT',
  'PERLLIB',
  'RUBYLIB',
  'RUBYOPT',
]);

const REFUSED_PREFIXES = ['LD_', 'DYLD_', 'NODE_', 'PYTHON', 'BUN_'] as const;

/** Variables of the refused families that only tune output or hashing; a tool may set them. */
const HARMLESS_EXCEPTIONS = new Set([
  'NODE_ENV',
  'NODE_NO_WARNINGS',
  'NODE_EXTRA_CA_CERTS',
  'PYTHONUNBUFFERED',
  'PYTHONIOENCODING',
  'PYTHONDONTWRITEBYTECODE',
  'PYTHONHASHSEED',
  'PYTHONUTF8',
]);

/** Why `name` may not be given to a script, or `undefined` when it may. */
export function refusedEnvironmentVariable(name: string): string | undefined {
  if (HARMLESS_EXCEPTIONS.has(name)) return undefined;
  const upper = name.toUpperCase();
  const prefix = REFUSED_PREFIXES.find((candidate) => upper.startsWith(candidate));
  if (prefix !== undefined || REFUSED_NAMES.has(upper)) {
    return `${name} changes what the interpreter or the dynamic loader loads before the script runs`;
  }
  return undefined;
}

export interface ScriptEnvironmentInput {
  readonly hostEnv: Readonly<Record<string, string | undefined>>;
  readonly allowList: readonly string[];
  readonly declared: Readonly<Record<string, string>> | undefined;
  /** HOME and TMPDIR as the script sees them. */
  readonly home: string;
  /** Set by the runner, last: they cannot be overridden. */
  readonly runnerVariables?: Readonly<Record<string, string>>;
}

/** Throws `SecurityError` for a refused variable and `InputError` for a malformed one. */
export function scriptEnvironment(input: ScriptEnvironmentInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of input.allowList) {
    const refusal = refusedEnvironmentVariable(name);
    if (refusal !== undefined) throw new SecurityError(`the environment variable ${refusal}`);
    const value = input.hostEnv[name];
    if (value !== undefined) env[name] = value;
  }
  for (const [name, value] of Object.entries(input.declared ?? {})) {
    if (!VARIABLE_NAME.test(name)) throw new InputError(`"${name}" is not a valid environment variable name`);
    const refusal = refusedEnvironmentVariable(name);
    if (refusal !== undefined) {
      throw new SecurityError(`the environment variable ${refusal}; it is refused`);
    }
    if (typeof value !== 'string' || value.includes('\0')) {
      throw new InputError(`environment variable ${name} must be a string without NUL bytes`);
    }
    env[name] = value;
  }
  env['HOME'] = input.home;
  env['TMPDIR'] = input.home;
  Object.assign(env, input.runnerVariables);
  return env;
}

/** What a script's HTTP clients need to use the run's filtering proxy (the only way out). */
export function proxyVariables(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    ALL_PROXY: url,
    all_proxy: url,
    NO_PROXY: '',
    no_proxy: '',
    // Node's fetch and http(s) honour the variables above only when asked (Node 22.21+/24.5+).
    NODE_USE_ENV_PROXY: '1',
  };
}
