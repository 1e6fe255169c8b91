/**
 * executor: runs assembled tasks — the LLM tool-calling loop against an OpenAI-compatible model — and publishes each task's fine-grained event stream.
 *
 * Entry point: today the service connects to NATS, reports ready and drains on SIGTERM/SIGINT; its
 * work arrives with the issues that build it.
 */
import { runService } from '@agentmesh/runtime';

await runService({
  name: 'executor',
  async start() {
    return { async stop() {} };
  },
});
