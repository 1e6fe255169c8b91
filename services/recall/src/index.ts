/**
 * recall: a NATS micro service that turns an ontology object's actions into ready-to-call dynamic tools
 * (seed 004). Entry point: wiring only.
 */
// First, so that a too-old Node.js stops with one clear line before any dependency loads.
import '@agentmesh/runtime/supported-node';
import { runService } from '@agentmesh/runtime';
import { recallConfigSchema } from './config.js';
import { startRecall } from './recall-service.js';

await runService({ name: 'recall', configSchema: recallConfigSchema, start: startRecall });
