/**
 * assembler: enriches received tasks with the agent's model, bound tools and the user's credentials,
 * sealed into a vault only executors can open, and publishes the assembled task. Entry point: wiring only.
 */
// First, so that a too-old Node.js stops with one clear line before any dependency loads.
import '@agentmesh/runtime/supported-node';
import { runService } from '@agentmesh/runtime';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

await runService({ name: 'assembler', configSchema: assemblerConfigSchema, start: startAssembler });
