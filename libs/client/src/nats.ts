// @agentmesh/client/nats: following a task's events over NATS (JetStream), for callers that are on the
// mesh's NATS. A separate entry point, so the HTTP client loads no NATS code.

export { followTaskEventsOverNats } from './nats-task-events.js';
export type { NatsTaskRef, NatsTaskEventsOptions } from './nats-task-events.js';
export { followThreadEventsOverNats } from './nats-thread-events.js';
export type { NatsThreadEventsOptions } from './nats-thread-events.js';
