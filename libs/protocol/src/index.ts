// @agentmesh/protocol: the contracts of the mesh. Zod schemas (each also names its inferred type), NATS names,
// error codes, event types, tool formats and their adapters. No I/O.

export { ErrorCode, ErrorCodeSchema, ERROR_CODE_INFO, ErrorBody } from './errors.js';
export {
  httpStatusOf,
  isRetryableByDefault,
  formatIssuePath,
  describeZodError,
  errorBody,
  zodErrorBody,
} from './errors.js';
export type { ErrorCodeInfo, IssueDescription, ZodErrorDescription } from './errors.js';

export {
  TraceId,
  TraceIdInput,
  InvalidTraceIdError,
  isTraceId,
  normaliseTraceId,
  newTraceId,
} from './trace-id.js';

export { WorkflowId, UserId, UserIdInput, IdempotencyKey, IsoDateTime } from './ids.js';

export { AccountId, isAccountId, InvalidSubjectTokenError } from './names.js';
export {
  Subjects,
  Streams,
  Consumers,
  AdvisoryConsumers,
  Services,
  Buckets,
  LegacyBuckets,
  Wildcards,
} from './names.js';
export {
  taskReceivedSubject,
  taskAssembledSubject,
  taskEventsSubject,
  taskEventLogSubject,
  cancelSubject,
} from './names.js';
export {
  accountEventsWildcard,
  accountEventLogWildcard,
  parseTaskSubject,
  parseEventsSubject,
} from './names.js';
export { parseEventLogSubject, parseCancelSubject, parseTaskStatusSubject } from './names.js';
export { accountSubmitSubject, parseSubmitSubject, redriveOf, redrivenTaskMsgId, taskKey } from './names.js';
export { nativeClassesToken, executorConsumer } from './names.js';
export { deadLetterSubject, deadLettersWildcard, taskMaxDeliveriesAdvisories } from './names.js';
export { webhookDeliverySubject, WebhookConsumers } from './names.js';
export type { Bucket, TaskStage } from './names.js';

export { ChatMessage, ChatSystemMessage, ChatDeveloperMessage, ChatUserMessage } from './chat.js';
export { ChatAssistantMessage, ChatToolMessage, ChatToolCall, ChatUserContentPart } from './chat.js';
export {
  ChatTextPart,
  ChatImagePart,
  ChatAudioPart,
  ChatFilePart,
  ChatRefusalPart,
  ModelTool,
} from './chat.js';

export {
  ClearVault,
  SealedVault,
  MODEL_API_KEY_VAULT_ENTRY,
  RESERVED_VAULT_ENTRY_PREFIX,
  modelApiKeyVaultEntry,
} from './vault.js';
export { SEALED_VAULT_ALGORITHM } from './vault.js';

export {
  TaskMeta,
  TaskParent,
  TASK_PARENT_HEADER,
  otelTraceIdOf,
  ClearTaskMeta,
  TaskInput,
  ToolProtocol,
  ModelConfig,
  AssembledModelConfig,
} from './task.js';
export {
  TaskLimits,
  ClearRuntimeConfig,
  ClearTaskPayload,
  AssembledRuntimeConfig,
  MAX_AGENT_MODELS,
  ModelLimits,
  OutputSchema,
} from './task.js';
export { DynamicToolSources, McpServerConnections } from './task.js';
export {
  ReceivedTask,
  AssembledTask,
  BoundTask,
  AccountType,
  DEFAULT_MAX_STEPS,
  DEFAULT_MODEL_API,
  DEFAULT_MODEL_PROVIDER,
  MODEL_APIS,
  ModelApi,
  ModelProvider,
  OPENAI_COMPATIBLE_PROVIDERS,
  ThinkingBudgetTokens,
} from './task.js';
export type { ClearTaskPayloadInput } from './task.js';

export {
  CancelSignal,
  ATTEMPTS_SUBJECT_PREFIX,
  AttemptQuery,
  AttemptReply,
  ExecutorInstance,
  executorAttemptsSubject,
} from './control.js';

export {
  NativeProviderAnnouncement,
  NATIVE_CLASS_NAME_PATTERN,
  nativeClassesOf,
  SCRIPT_RUNNER_CLASS,
} from './native-providers.js';

export { taskBinding, canonicalJson, TASK_BINDING_SCHEME } from './task-binding.js';

export {
  EventType,
  EventAgentVersion,
  TERMINAL_EVENT_TYPES,
  TaskEvent,
  isTerminalEvent,
  isTerminalEventType,
} from './events.js';
export {
  ToolThinkingEvent,
  ToolCallDeltaEvent,
  ToolStartEvent,
  ToolResultEvent,
  ToolProgressEvent,
  MessageChunkEvent,
  AttemptStartedEvent,
  DoneEvent,
} from './events.js';
export { ToolProgressData, AttemptStartedData } from './events.js';
export {
  ApprovalRequestedEvent,
  ApprovalDecidedEvent,
  SubtaskStartedEvent,
  SubtaskFinishedEvent,
  StepFinishedEvent,
  ApprovalRequestedData,
  ApprovalDecidedData,
  SubtaskStartedData,
  SubtaskFinishedData,
  StepFinishedData,
} from './events.js';
export { ToolCallDeltaData } from './events.js';
export { ErrorEvent, ToolThinkingData, ToolStartData, ToolResultData, MessageChunkData } from './events.js';
export { DoneData, ErrorData, ToolError, TokenUsage, ModelWaitingData, ModelWaitingEvent } from './events.js';
export type { EventData, TerminalEvent, TerminalEventType } from './events.js';
export { isSseEventNameOf, SseEventName, sseEventName } from './sse-event-names.js';
export { TaskTranscript } from './task-transcript.js';
export type { VoidedText } from './task-transcript.js';

export {
  TaskStatus,
  TaskStatusSchema,
  TaskStatusRecord,
  TASK_PREVIEW_LENGTH,
  FINAL_TASK_STATUSES,
  isFinalTaskStatus,
  finalStatusFields,
} from './task-status.js';
export type { FinalStatusFields } from './task-status.js';

export {
  UniqueIdentity,
  ActionRecallRequest,
  RecallRequest,
  ActionRecallResponse,
  RecallErrorBody,
} from './recall.js';
export { recallIdentities, ActionQueryRequest, ActionQueryResponse, Action, ActionSource } from './recall.js';
export { ActionTypeInfo, ConditionOperation, ConditionValueFrom, IdentityFailure } from './recall.js';
export {
  ActionSourceType,
  ApiSpec,
  OpenApiParameter,
  OpenApiParameterLocation,
  ToolDetailResponse,
} from './recall.js';
export type { ActionRecallResponseInput } from './recall.js';

export { AgentDefinition, AgentModel, AgentModels, agentModels } from './agent.js';
export { AgentVersionNumber, AgentDigest, RunToolDigests } from './agent-version-number.js';
export {
  parseAgentVersion,
  WorkflowRef,
  WorkflowRefText,
  parseWorkflowRef,
  formatWorkflowRef,
  AgentVersionStamp,
  BoundToolDigests,
  VersionedAgent,
  AgentVersionSummary,
  AgentVersionList,
  AgentDiffEntry,
  AgentDiff,
  AgentRollbackRequest,
  diffJson,
} from './agent-version.js';
export type { WorkflowPin } from './agent-version.js';
export {
  ApprovalOperator,
  ApprovalCondition,
  ApprovalPolicy,
  ArgumentPath,
  ToolApprovals,
  MAX_APPROVAL_TIMEOUT_MS,
} from './tools/approval-policy.js';
export {
  ApprovalState,
  ApprovalRecord,
  ParkedTask,
  ApprovalDecisionRequest,
  TaskApprovals,
  RESUMED_PARK_HEADER,
} from './approval.js';
export { AccountDailyUsage, accountUsageKey, utcDay } from './account-usage.js';
export type { AgentDefinitionInput } from './agent.js';

export {
  SubmitTaskRequest,
  SubmitTaskReply,
  StreamTokenReply,
  TaskListReply,
  TaskListQuery,
  taskMatches,
  MAX_TASK_LIST,
  AgentListReply,
  CallerReply,
  PreAssembledTaskRequest,
  isPreAssembledSubmission,
} from './gateway.js';
export type { SubmitTaskRequestInput } from './gateway.js';

export {
  RegistryScopeLabel,
  ScopedAgent,
  AgentList,
  ScopedTool,
  ToolList,
  ToolWriteReply,
  CredentialNameList,
  AccountList,
  ApiKeyRegistrationReply,
  ToolImportReply,
} from './management.js';

export {
  DEAD_LETTER_LIST_DEFAULT,
  DEAD_LETTER_LIST_MAX,
  DeadLetter,
  DeadLetterInputSummary,
  DeadLetterList,
  DeadLetterListQuery,
  DeadLetterReason,
  DeadLetterRedrive,
  DeadLetterRedriveReply,
  DeadLetterSource,
  DeadLetterView,
  deadLetterView,
} from './dead-letter.js';
export {
  TASK_WEBHOOK_EVENTS,
  TaskWebhookEvent,
  TaskWebhookRequest,
  WebhookDeadLetter,
  WebhookDeadLetterList,
  WebhookDeadLetterView,
  webhookDeadLetterView,
  WebhookDelivery,
  WebhookEndpointCreate,
  WebhookEndpointId,
  WebhookEndpointList,
  WebhookEndpointView,
  WebhookEndpointWithSecret,
  WebhookEventType,
  WebhookMessageId,
  WebhookPayload,
  WebhookRotateRequest,
  WebhookTestResult,
} from './webhooks.js';
export { buildJsonSchemas, serialiseJsonSchema } from './json-schemas.js';
export type { JsonSchemaDocument } from './json-schemas.js';

// ---- tools ----

export {
  JsonSchema,
  JsonSchemaObject,
  JsonObject,
  emptyParameters,
  isJsonObject,
} from './tools/json-schema.js';
export { FunctionName, FUNCTION_NAME_PATTERN, FUNCTION_NAME_MAX_LENGTH } from './tools/function-name.js';
export { isFunctionName, toFunctionName } from './tools/function-name.js';
export {
  HttpMethod,
  ParamPlacement,
  ArgumentLocation,
  OpenApiArgumentBinding,
  OpenApiRequestTemplate,
  HttpUrl,
  HttpUrlTemplate,
} from './tools/http-request.js';
export { AuthType, AuthLocation, AuthMapping, AuthConfig, CredentialName } from './tools/http-auth.js';
export { ApiKeyAuth, BearerAuth, BasicAuth, OAuth2Auth, OAuth2ClientCredentials } from './tools/http-auth.js';
export { authCredentialSources } from './tools/http-auth.js';
export {
  ContextParam,
  ContextParams,
  ContextParamSource,
  TaskContextField,
  VARIABLES_PREFIX,
} from './tools/context-params.js';
export { HttpPlugin, HttpPluginExecution, PluginStatus, PluginStatusInput } from './tools/http-plugin.js';
export type { HttpPluginInput } from './tools/http-plugin.js';
export { PayloadTool, NativePayloadTool, HttpPayloadTool, PayloadAuthConfig } from './tools/payload-tool.js';
export { ShortAuthConfig, NativeExecutionConfig, HttpExecutionConfig } from './tools/payload-tool.js';
export { isShortAuthConfig } from './tools/payload-tool.js';
export { ToolJson, ToolJsonHandler, ToolJsonSecurityContext, ToolJsonExample } from './tools/tool-json.js';
export { ScriptLanguage, ExternalScriptHandler, ServiceMethodHandler } from './tools/tool-json.js';
export { DynamicTool, FixedParams } from './tools/dynamic-tool.js';
export type { DynamicToolInput } from './tools/dynamic-tool.js';
export { ToolDefinition, ToolType, ToolFormat, ToolOrigin } from './tools/canonical.js';
export { HttpTool, HttpToolExecution, NativeTool, ScriptTool, ScriptHandler } from './tools/canonical.js';
export {
  ScriptSecurityContext,
  ScriptExample,
  DynamicToolDefinition,
  McpTool,
  AgentTool,
  A2aTool,
} from './tools/canonical.js';
export {
  A2A_CONTINUE_TASK_ARGUMENT,
  A2aAuth,
  a2aMessageParameters,
  a2aToolCredentials,
} from './tools/a2a-tool.js';
export {
  McpServerName,
  McpTransportType,
  McpHttpTransport,
  McpStdioTransport,
  McpTransport,
  McpEnvAuth,
  McpAuthConfig,
  McpToolFilter,
  McpServerConnection,
  McpServerDefinition,
  mcpServerConnection,
  mcpServerCredentials,
  mcpToolAllowed,
  mcpFunctionName,
} from './tools/mcp-server.js';
export type { McpServerDefinitionInput } from './tools/mcp-server.js';
export {
  DynamicMcpTool,
  RecalledTool,
  isDynamicMcpTool,
  fromDynamicMcpTool,
} from './tools/mcp-dynamic-tool.js';
export type { DynamicMcpToolInput } from './tools/mcp-dynamic-tool.js';
export { fromHttpPlugin, toHttpPlugin, fromPayloadTool, toPayloadTool } from './tools/adapters.js';
export { fromToolJson, toToolJson, fromDynamicTool, toDynamicTool } from './tools/adapters.js';
export { detectToolFormat, importToolDefinition, SYS_AI_PLUGIN_ROW } from './tools/import.js';
export { pluginFromRow, SysAiPluginRow } from './tools/sys-ai-plugin-row.js';
export type { DetectedToolFormat, ImportedTool } from './tools/import.js';
export { toModelTool } from './tools/model-tool.js';
export { requiredCredentials } from './tools/credentials.js';
export { filterTools, toolNamespace, toolTags } from './tools/tool-filter.js';
export type { ToolFilter } from './tools/tool-filter.js';

export {
  ScheduleId,
  isTimeZone,
  TimeZone,
  ScheduleWorkflowRef,
  scheduleAgentOf,
  MissedFiringPolicy,
  CronExpression,
  ScheduleInput,
  CreateScheduleRequest,
  Schedule,
  FiringKind,
  FiringState,
  ScheduleFiring,
  ScheduleListItem,
  ScheduleList,
  ScheduleRun,
  ScheduleDetail,
  ScheduleDetailQuery,
  RunScheduleRequest,
  RunScheduleReply,
} from './schedule.js';
export type { CreateScheduleRequestInput } from './schedule.js';
export { ThreadId, isThreadId, ThreadStrategy, DEFAULT_THREAD_STRATEGY, TaskThread } from './thread-id.js';
export {
  ThreadCompaction,
  ThreadTurnEntry,
  ThreadCompactionEntry,
  ThreadEntry,
  ThreadRun,
  ThreadRecord,
  THREAD_RUNS_KEPT,
  CreateThreadRequest,
  ThreadSummary,
  StoredThreadEntry,
  ThreadReply,
  ThreadListReply,
  ThreadApiRequest,
  THREAD_API_PREFIX,
  threadEntriesSubject,
  threadApiSubject,
  parseThreadApiSubject,
  threadKey,
  estimateTokens,
  threadHistory,
  retainedEntries,
  ThreadRetention,
  THREAD_STREAM_MAX_AGE_SECONDS,
} from './threads.js';
