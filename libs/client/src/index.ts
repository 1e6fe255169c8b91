// @agentmesh/client: the gateway's HTTP API for upstream code and operators. Submit tasks, follow their
// events over SSE (resumed after a dropped connection), read status, cancel; typed errors. The
// `agentmesh` CLI (src/cli) is built on it.

export { MeshClient } from './mesh-client.js';
export type { MeshClientOptions, CallOptions, EventsOptions, RunningTask } from './mesh-client.js';
export type { TailOptions } from './account-event-stream.js';
export type { ThreadEvent, ThreadEventsOptions } from './thread-event-stream.js';
export { ManagementClient } from './management-client.js';
export type { ToolImportOptions, ApiKeyRegistration } from './management-client.js';
export type { GatewayHttpOptions } from './gateway-http.js';
export { DEFAULT_RECONNECT_POLICY, DEFAULT_IDLE_TIMEOUT_MS } from './task-event-stream.js';
export type { ReconnectPolicy, FollowEventsOptions } from './task-event-stream.js';
// The fold of a task's text with attempt_started applied, for callers that show or keep the answer.
export { TaskTranscript } from '@agentmesh/protocol';
export type { VoidedText } from '@agentmesh/protocol';
export { MeshClientError, MeshApiError, MeshUnreachableError, MeshProtocolError } from './errors.js';
