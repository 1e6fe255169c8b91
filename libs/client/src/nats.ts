// @agentmesh/client/nats: following a task's events over NATS (JetStream), for callers that are on the
// mesh's NATS. A separate entry point, so the HTTP client loads no NATS code.

export { followTaskEventsOverNats } from './nats-task-events.js';
export type { NatsTaskRef, NatsTaskEventsOptions } from './nats-task-events.js';
