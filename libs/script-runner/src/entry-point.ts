/**
 * Seed 003's `handler.entryPoint`: a function of the script to call, instead of running the script as a
 * program. A small bootstrap, given to the interpreter on its command line (never through a shell), loads
 * the script as a module, reads the input JSON from stdin, calls the named function with it (awaiting it
 * when it returns a promise or coroutine) and prints the result as JSON, so the contract with the runner
 * stays the same: JSON in on stdin, one JSON object out on stdout.
 */
import type { ScriptLanguage } from '@agentmesh/protocol';
import { InputError } from './errors.js';

/** A plain identifier: it is handed to the bootstrap as an argument, never spliced into code. */
const ENTRY_POINT = /^[A-Za-z_][A-Za-z0-9_]*$/;

const PYTHON_BOOTSTRAP = `
import asyncio, importlib.util, inspect, json, sys
path, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location("agentmesh_tool", path)
module = importlib.util.module_from_spec(spec)
sys.modules["agentmesh_tool"] = module
spec.loader.exec_module(module)
function = getattr(module, name, None)
if not callable(function):
    sys.stderr.write("the script has no function %s (its entryPoint)\\n" % name)
    sys.exit(2)
result = function(json.load(sys.stdin))
if inspect.isawaitable(result):
    async def wait():
        return await result
    result = asyncio.run(wait())
sys.stdout.write(json.dumps(result))
`;

const NODE_BOOTSTRAP = `
const [path, name] = process.argv.slice(1);
const { pathToFileURL } = await import('node:url');
const module = await import(pathToFileURL(path).href);
const fn = typeof module[name] === 'function' ? module[name] : module.default?.[name];
if (typeof fn !== 'function') {
  process.stderr.write('the script exports no function ' + name + ' (its entryPoint)\\n');
  process.exit(2);
}
let text = '';
for await (const chunk of process.stdin) text += chunk;
const result = await fn(JSON.parse(text === '' ? '{}' : text));
process.stdout.write(JSON.stringify(result));
`;

/** The interpreter's arguments that call `entryPoint` of the script at `scriptPath`. */
export function entryPointArgs(language: ScriptLanguage, scriptPath: string, entryPoint: string): string[] {
  if (!ENTRY_POINT.test(entryPoint)) {
    throw new InputError(`entryPoint must be a function name (letters, digits and _), got "${entryPoint}"`);
  }
  switch (language) {
    case 'python':
      return ['-c', PYTHON_BOOTSTRAP, scriptPath, entryPoint];
    case 'nodejs':
      return ['--input-type=module', '-e', NODE_BOOTSTRAP, scriptPath, entryPoint];
    case 'bun':
      throw new InputError(
        'entryPoint is supported for python and nodejs scripts; a bun script runs as a program',
      );
  }
}
