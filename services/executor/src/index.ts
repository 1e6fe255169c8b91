/**
 * executor: runs assembled tasks — the LLM tool-calling loop against an OpenAI-compatible model — and
 * publishes each task's fine-grained event stream.
 */
import { runService } from '@agentmesh/runtime';
import { executorConfigSchema } from './config.js';
import { startExecutor } from './executor-service.js';

await runService({ name: 'executor', configSchema: executorConfigSchema, start: startExecutor });
