/**
 * assembler: enriches received tasks with the agent's model, bound tools and the user's credentials,
 * sealed into a vault only executors can open, and publishes the assembled task. Entry point: wiring only.
 */
import { runService } from '@agentmesh/runtime';
import { startAssembler } from './assembler-service.js';
import { assemblerConfigSchema } from './config.js';

await runService({ name: 'assembler', configSchema: assemblerConfigSchema, start: startAssembler });
