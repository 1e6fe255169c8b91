export {
  AgentToolNotStorableError,
  CorruptRecordError,
  EventStreamConflictError,
  InvalidRegistryNameError,
  KeyListingClosedError,
  KeyListingTimeoutError,
  PublishUnconfirmedError,
  TaskStatusContentionError,
  ScheduleContentionError,
  TaskStatusWriteError,
  AccountUsageWriteError,
  TaskEventsExpiredError,
  StreamUpdateRefusedError,
  ThreadContentionError,
} from './errors.js';
export { isJetStreamApiError } from './jetstream-api-error.js';
export { getLastStoredEvent, getStoredMessage } from './stored-message.js';
export { decodeJson, encodeJson } from './json.js';
export { listLatestKeys, visitLatestKeys } from './stores/latest-keys.js';
export type { LatestKeysOptions } from './stores/latest-keys.js';
export { DEFAULT_PUBLISH_RETRY, publishWithRetry } from './jetstream-publish.js';
export type { ConfirmedPublish, PublishRetry } from './jetstream-publish.js';
export { decodeCancelSignal } from './cancel-signal.js';
export { endMalformedTask, MalformedTaskReason, readMalformedTaskIdentity } from './malformed-task.js';
export type {
  EndMalformedTaskOptions,
  MalformedTaskEnding,
  MalformedTaskIdentity,
} from './malformed-task.js';
export {
  DEFAULT_NATIVE_PROVIDER_TTL_MS,
  DEFAULT_RECALL_ACTIONS_TTL_MS,
  DEFAULT_RECALL_TOOLS_TTL_MS,
  DEFAULT_DEAD_LETTER_RETENTION_MS,
  DEFAULT_TASK_RETENTION_MS,
  SCHEDULE_FIRING_TTL_MS,
  ensureDeadLetterStream,
  ensureTaskAdvisoryStream,
  TASK_ADVISORY_MAX_AGE_MS,
  ensureThreadStream,
  DEFAULT_THREAD_RETENTION_MS,
  DEFAULT_THREAD_MAX_ENTRIES,
  ensureWebhookStream,
  ensureMeshStreams,
  openBucket,
  openMeshBuckets,
  openNativeProvidersBucket,
  provisionMeshResources,
} from './resources.js';
export type {
  MeshBucketName,
  MeshBuckets,
  MeshResourceOptions,
  MissingResource,
  ProvisionOptions,
  ProvisionReport,
  ResourceWaitOptions,
} from './resources.js';
export { durableConsumerExists, ensureDurableConsumer, runDurableConsumer } from './durable-consumer.js';
export type { DurableConsumerSpec, RunningConsumer } from './durable-consumer.js';
export { TaskEventWriter } from './task-event-writer.js';
export type { TaskEventWriterOptions } from './task-event-writer.js';
export {
  expiredTaskEvents,
  followTaskEvents,
  hasStoredTaskEvents,
  storedTaskEventCount,
} from './task-event-reader.js';
export { readLastTaskEvent, readTaskEventLog } from './task-event-log.js';
export { requestTaskCancel } from './task-cancel-request.js';
export type { TaskCancelRequest } from './task-cancel-request.js';
export type { ReadTaskEventLogOptions } from './task-event-log.js';
export type { FollowTaskEventsOptions } from './task-event-reader.js';
export {
  AgentStore,
  agentDigest,
  stamped as stampedAgent,
  StoredAgent,
  migrateUnversionedAgents,
  versionKey as agentVersionKey,
  isAgentVersionKey,
  DEFAULT_AGENT_VERSIONS_KEPT,
} from './stores/agent-store.js';
export { McpServerStore, type ScopedMcpServer } from './stores/mcp-server-store.js';
export type { ScopedAgent, AgentVersions, AgentWriteOptions } from './stores/agent-store.js';
export { ApiKeyGrant, ApiKeyStore } from './stores/api-key-store.js';
export { CredentialStore } from './stores/credential-store.js';
export type { CredentialKeys, ResolvedCredentials } from './stores/credential-store.js';
export { ACCOUNT_WIDE_SEGMENT, accountCredentialKey, credentialKey } from './stores/credential-record.js';
export { LiveCredentials } from './stores/live-credentials.js';
export type { LiveCredentialsOptions } from './stores/live-credentials.js';
export { KvMirror } from './stores/kv-mirror.js';
export type {
  ConnectionEvents,
  KvMirrorOptions,
  LookupSource,
  MirrorEvent,
  MirrorLookup,
} from './stores/kv-mirror.js';
export { IdempotencyStore } from './stores/idempotency-store.js';
export type { IdempotencyClaim } from './stores/idempotency-store.js';
export { ToolStore, TOOL_SOURCE_FILE_FIELD, toolSourceFile } from './stores/tool-store.js';
export type { PluginCatalogue, ScopedPluginStore, ScopedTool } from './stores/tool-store.js';
export {
  accountScope,
  lookupOrder,
  parseScopedKey,
  scopeLabel,
  scopedKey,
  SHARED_CATALOGUE,
} from './registry/registry-scope.js';
export type { RegistryScope } from './registry/registry-scope.js';
export { scopedRegistryView } from './registry/scoped-registry-view.js';
export type { RegistryBucket } from './registry/scoped-registry-view.js';
export {
  LiveDefinitions,
  startLiveAgents,
  startLiveMcpServers,
  startLiveTools,
} from './registry/live-definitions.js';
export type { LiveDefinitionsOptions } from './registry/live-definitions.js';
export { migrateLegacyRegistryEntries } from './registry/legacy-registry-migration.js';
export { copyLegacyToolBucket } from './registry/legacy-tool-bucket.js';
export type { LegacyToolBucketReport } from './registry/legacy-tool-bucket.js';
export type { LegacyMigrationReport } from './registry/legacy-registry-migration.js';
export { TaskStatusStore } from './stores/task-status-store.js';
export { ParkedTaskStore, resumeMessageId } from './parking/parked-task-store.js';
export type { VersionedParkedTask } from './parking/parked-task-store.js';
export {
  cancelApprovals,
  decideApproval,
  DecisionRefusal,
  expireApprovals,
  isReadyToResume,
  nextApprovalExpiry,
} from './parking/approval-decisions.js';
export type { ApprovalDecision, DecisionOutcome } from './parking/approval-decisions.js';
export { AccountUsageStore, type TaskUsage } from './stores/account-usage-store.js';
export { DeadLetterStore, deadLetterOf } from './stores/dead-letter-store.js';
export { TaskWebhookStore, WebhookDeadLetterStore, WebhookStore } from './stores/webhook-store.js';
export type { TaskWebhook, WebhookRekeyReport, WebhookTarget } from './stores/webhook-store.js';
export type {
  DeadLetterCause,
  DeadLetterFilter,
  DeadLetterListing,
  MalformedDeadLetter,
  StoredDeadLetter,
} from './stores/dead-letter-store.js';
export type { VersionedTaskStatus } from './stores/task-status-store.js';
export { ScheduleStore } from './stores/schedule-store.js';
export type { VersionedFiring, VersionedSchedule } from './stores/schedule-store.js';
export { ThreadStore, runEndedByStatus, threadSummary } from './stores/thread-store.js';
export type { RunEnded, ThreadAdmission, VersionedThread } from './stores/thread-store.js';
export { followThreadEvents } from './thread-event-reader.js';
export type { FollowThreadEventsOptions, ThreadEventAt } from './thread-event-reader.js';
export { startThreadPromoter } from './stores/thread-promoter.js';
export type { ThreadPromoterOptions } from './stores/thread-promoter.js';
