/**
 * The Node.js versions the services run on, checked before anything else loads. Importing
 * `@agentmesh/runtime/supported-node` first in a service's entry point turns a too-old Node into one
 * clear line and exit status 1: the services' dependencies (undici among them) otherwise fail while
 * loading, with a stack trace that does not say the Node is the problem.
 */

/** The oldest Node.js the services support (package.json `engines`). */
export const MINIMUM_NODE_VERSION = '22.12.0';

/** Whether `version` (e.g. `process.versions.node`, `20.20.2`) is at least {@link MINIMUM_NODE_VERSION}. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 22 || (major === 22 && minor >= 12);
}

/** The line a service prints when started on an unsupported Node; undefined when `version` is fine. */
export function unsupportedNodeMessage(version: string, entry: string | undefined): string | undefined {
  if (isSupportedNode(version)) return undefined;
  return (
    `${entry ?? 'this service'} needs Node.js >= ${MINIMUM_NODE_VERSION} and was started on Node.js ${version}. ` +
    '`npm start` fetches a supported Node by itself; to run a service on its own, put Node.js 22.12 or newer ' +
    'first on PATH (e.g. `source infra/setup-machine.sh`).'
  );
}
