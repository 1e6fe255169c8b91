/**
 * @agentmesh/testkit — real servers for integration tests: NATS (one server or a JetStream cluster)
 * through testcontainers, a scripted OpenAI-compatible model, a recording HTTP API, a metric reader
 * collecting on demand, a stand-in for the recall service, an MCP server written with the official SDK
 * (Streamable HTTP and a stdio script), and bounded waiting. Nothing here is a mock: every server listens on 127.0.0.1.
 */
export { waitFor, WaitForTimeoutError, type WaitForOptions } from './wait-for.js';
export { findFreePort, findFreePorts } from './free-ports.js';

export { startNats, type NatsServer, type StartNatsOptions } from './nats/start-nats.js';
export {
  startNatsCluster,
  type NatsCluster,
  type NatsClusterNode,
  type StartNatsClusterOptions,
} from './nats/start-nats-cluster.js';
export type { NatsServerControls } from './nats/nats-server-handle.js';
export type { NatsServerConfig } from './nats/nats-runtime.js';
export type { NatsClientOptions } from './nats/nats-readiness.js';
export { NatsMode, DEFAULT_NATS_IMAGE } from './nats/nats-settings.js';
export { freezingOnFirstPublish, type FreezingPublisher } from './nats/freezing-publisher.js';
export { NatsStartupError } from './nats/nats-runtime.js';
export { TESTKIT_LABEL } from './nats/nats-container.js';
export {
  connectAsInfraUser,
  generateInfraPasswords,
  INFRA_EXAMPLE_ACCOUNT,
  INFRA_NATS_DIR,
  INFRA_NATS_USERS,
  infraInboxPrefix,
  infraPasswordEnvironment,
  infraPasswordVariable,
  type InfraClient,
  type InfraNatsUser,
} from './nats/infra-users.js';

export {
  startScriptedModel,
  type RecordedModelRequest,
  type ScriptedModel,
  type ScriptedModelOptions,
} from './model/scripted-model-server.js';
export {
  ModelFault,
  sseBody,
  type RawReply,
  type ChatCompletionRequest,
  type ChatMessage,
  type ChatRequestBody,
  type DropConnectionFault,
  type HangFault,
  type MalformedJsonFault,
  type ModelFaultKind,
  type ModelFaultStep,
  type ModelOutcome,
  type ModelReply,
  type ModelStep,
  type ModelUsage,
  type RateLimitFault,
  type RespondFunction,
  type ScriptedToolCall,
  type ServerErrorFault,
} from './model/model-script.js';

export {
  startRecordingApi,
  type RecordedApiRequest,
  type RecordingApi,
  type RecordingApiOptions,
} from './recording-api/recording-api-server.js';
export type { RouteReply, RouteSpec, RoutedRequest } from './recording-api/route-table.js';
export type { HeaderMap, QueryMap, RecordedRequest } from './http/recorded-request.js';

export {
  startRecallStandIn,
  type RecallStandIn,
  type RecallStandInAnswer,
  type RecallStandInRequest,
} from './recall/recall-stand-in.js';

export { CollectingMetricReader, type CollectedPoint } from './metrics/collecting-metric-reader.js';

export {
  startServiceProcess,
  type LogLine,
  type ServiceProcess,
  type ServiceProcessOptions,
} from './service-process.js';

export {
  startMcpServer,
  type McpTestServer,
  type McpTestServerOptions,
  type RecordedMcpHttpRequest,
  type RecordedMcpToolCall,
} from './mcp/mcp-test-server.js';
export { MCP_STDIO_SERVER_SCRIPT } from './mcp/mcp-stdio-script.js';
export { MCP_TEST_IMAGE_BASE64, MCP_TEST_RESOURCE_URI } from './mcp/mcp-test-tools.js';

export { parkedTaskFixture, type ParkedTaskFixtureOptions } from './parked-task-fixture.js';
