/**
 * assembler: enriches received tasks with the agent's model, bound tools and the user's credentials, sealed into a vault only executors can open, and publishes the assembled task.
 *
 * Entry point: today the service connects to NATS, reports ready and drains on SIGTERM/SIGINT; its
 * work arrives with the issues that build it.
 */
import { runService } from '@agentmesh/runtime';

await runService({
  name: 'assembler',
  async start() {
    return { async stop() {} };
  },
});
