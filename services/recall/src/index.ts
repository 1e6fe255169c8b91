/**
 * recall: a NATS micro service that turns an ontology object's actions into ready-to-call dynamic tools
 * (seed 004). Entry point: wiring only.
 */
import { runService } from '@agentmesh/runtime';
import { recallConfigSchema } from './config.js';
import { startRecall } from './recall-service.js';

await runService({ name: 'recall', configSchema: recallConfigSchema, start: startRecall });
