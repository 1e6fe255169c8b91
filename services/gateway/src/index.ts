/**
 * gateway: the mesh's front door. Upstreams submit agent tasks over HTTP or the NATS request subject; the gateway authenticates them, stamps a trace_id, puts them on JetStream and streams their events back (SSE).
 *
 * Entry point: today the service connects to NATS, reports ready and drains on SIGTERM/SIGINT; its
 * work arrives with the issues that build it.
 */
import { runService } from '@agentmesh/runtime';

await runService({
  name: 'gateway',
  async start() {
    return { async stop() {} };
  },
});
