/**
 * Side-effect entry `@agentmesh/runtime/supported-node`: imported first by each service's index.ts, so it
 * runs before any other module of the service is evaluated, and exits with one clear line on a Node.js
 * older than the services support.
 */
import { unsupportedNodeMessage } from './supported-node.js';

const message = unsupportedNodeMessage(process.versions.node, process.argv[1]);
if (message !== undefined) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}
