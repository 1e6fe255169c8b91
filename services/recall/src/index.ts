/**
 * recall: a NATS micro service that turns an ontology object's actions into ready-to-call dynamic tools (seed 004).
 *
 * Entry point: today the service connects to NATS, reports ready and drains on SIGTERM/SIGINT; its
 * work arrives with the issues that build it.
 */
import { runService } from '@agentmesh/runtime';

await runService({
  name: 'recall',
  async start() {
    return { async stop() {} };
  },
});
