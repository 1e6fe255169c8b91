// The Node.js npm start runs the mesh on. The start script itself runs on whatever `node` is first on
// PATH (Node 20 included, so only Node 20 APIs here); the services need >= 22.12 (package.json
// `engines`). When the running Node is older, the `node@24` npm package is installed into the same cache
// folder infra/setup-machine.sh uses ($AGENTMESH_CACHE_DIR, default ~/.cache/agentmesh, then node24/),
// or reused from there. libs/runtime's supported-node check says the same for a service started alone.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { say, StartError } from './output.mjs';

export const MINIMUM_NODE = '22.12';

export function isSupportedNode(version) {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

function versionOf(node) {
  const result = spawnSync(node, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim() : undefined;
}

/**
 * The path of a Node.js >= 22.12: this process's own when it is new enough, else the cached `node@24`
 * package (installed with npm on first use). Throws StartError when none can be had.
 */
export function supportedNode() {
  if (isSupportedNode(process.versions.node)) return process.execPath;
  const cache = process.env.AGENTMESH_CACHE_DIR || join(homedir(), '.cache', 'agentmesh');
  const dir = join(cache, 'node24');
  const node = join(dir, 'node_modules', 'node', 'bin', 'node');
  const cached = existsSync(node) ? versionOf(node) : undefined;
  if (cached && isSupportedNode(cached)) {
    say(
      `Node.js ${process.version} is older than ${MINIMUM_NODE}: running the mesh on Node.js ${cached} from ${dir}`,
    );
    return node;
  }
  say(
    `Node.js ${process.version} is older than ${MINIMUM_NODE}: installing Node.js 24 (the node@24 npm package) into ${dir}`,
  );
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, 'package.json'))) {
    writeFileSync(join(dir, 'package.json'), '{ "name": "node24", "private": true }\n');
  }
  // npm of the running Node (npm start sets npm_execpath), else the one on PATH.
  const npm = process.env.npm_execpath
    ? { command: process.execPath, args: [process.env.npm_execpath] }
    : { command: 'npm', args: [] };
  const install = spawnSync(npm.command, [...npm.args, 'install', '--no-audit', '--no-fund', 'node@24'], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const installed = existsSync(node) ? versionOf(node) : undefined;
  if (install.status !== 0 || !installed || !isSupportedNode(installed)) {
    throw new StartError(
      `the mesh needs Node.js >= ${MINIMUM_NODE} and this is ${process.version}; installing the node@24 npm ` +
        `package into ${dir} did not give one (npm exit ${install.status ?? install.signal}). Install Node.js ` +
        `22.12 or newer yourself (https://nodejs.org, nvm, or \`source infra/setup-machine.sh\`) and put it ` +
        'first on PATH, then run npm start again.',
    );
  }
  say(`installed Node.js ${installed}`);
  return node;
}
