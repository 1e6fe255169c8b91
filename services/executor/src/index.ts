/**
 * executor: runs assembled tasks — the LLM tool-calling loop against an OpenAI-compatible model — and
 * publishes each task's fine-grained event stream.
 */
// First, so that a too-old Node.js stops with one clear line before any dependency loads.
import '@agentmesh/runtime/supported-node';
import { runService } from '@agentmesh/runtime';
import { executorConfigSchema } from './config.js';
import { startExecutor } from './executor-service.js';

await runService({ name: 'executor', configSchema: executorConfigSchema, start: startExecutor });
