/**
 * gateway: the mesh's front door. Upstreams submit agent tasks over HTTP or the NATS request subject;
 * the gateway authenticates them, stamps a trace_id, puts them on JetStream and streams their events
 * back (SSE). It also answers seed 004's recall endpoints (through the recall service over NATS) and serves
 * the management plane (agents, plugins and OpenAPI plugin import, credentials, API keys).
 */
// First, so that a too-old Node.js stops with one clear line before any dependency loads.
import '@agentmesh/runtime/supported-node';
import { runService } from '@agentmesh/runtime';
import { gatewayConfigSchema } from './config.js';
import { startGateway } from './gateway.js';

await runService({
  name: 'gateway',
  configSchema: gatewayConfigSchema,
  start: (context) => startGateway(context),
});
