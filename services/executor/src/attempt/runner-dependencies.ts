/**
 * What a TaskRunner is given (the executor's stores, keys, tools, model factory and limits), and what it
 * is told of a delivery. Apart from task-runner.ts so the attempt's parts (attempt/) can name them.
 */
import type { ParkedTaskStore, TaskStatusStore, ThreadStore } from '@agentmesh/bus';
import type { AccountDays } from '../budget/account-day.js';
import type { Logger } from '@agentmesh/runtime';
import type { VaultKeyring } from '@agentmesh/vault';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { ChatModel } from '../agent-loop.js';
import type { ApprovalSettings } from '../approval/task-parking.js';
import type { AttemptOwners } from '../attempt-owners.js';
import type { DeadLetterRecorder } from '../dead-letter-listener.js';
import type { ExecutorMetrics } from '../executor-metrics.js';
import type { HeartbeatClock } from '../heartbeat-clock.js';
import type { ModelPriceTable } from '../budget/model-prices.js';
import type { SharedKeyLimits } from '../model-choice/shared-key-limits.js';
import type { RunningTasks } from '../running-tasks.js';
import type { OpenSecrets } from '../secrets/index.js';
import type { DeltaCoalescing } from '../task-event-sink.js';
import type { TaskSlot } from '../task-slot.js';
import type { ToolRunners } from '../tools/tool-dispatch.js';

export interface ModelClientOptions {
  /** The model config's wire API (absent: `openai-chat`); a known one (checked before the task runs). */
  api?: string;
  /** The model config's provider: a known profile (checked before the task runs). */
  provider: string;
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
  /** Longest wait for the answer's first byte (headers). */
  firstByteTimeoutMs?: number;
  /** Longest silence inside a streamed answer. */
  idleTimeoutMs?: number;
}

export interface TaskRunnerDependencies {
  js: JetStreamClient;
  jsm: JetStreamManager;
  statuses: TaskStatusStore;
  keyring: VaultKeyring;
  running: RunningTasks;
  tools: ToolRunners;
  createModel: (options: ModelClientOptions) => ChatModel;
  /** Attempts that did work (wrote events) a task gets; the next one ends it with MAX_DELIVER_EXCEEDED. */
  maxDeliver: number;
  /**
   * JetStream's delivery limit of the executor consumers (its `max_deliver`): the delivery that reaches it
   * ends the task whatever the work attempts, as no further one comes. 2 × maxDeliver + 1 by default.
   */
  maxDeliveries?: number;
  /** Threads: a task run in one appends its turn there and frees it at its end; none: not written. */
  threads?: ThreadStore;
  /** Where a task that ran out of deliveries is copied (MESH_DEAD_LETTERS); none: not copied. */
  deadLetters?: DeadLetterRecorder;
  /** How text deltas gather into events (TaskEventSink); 50 ms / 4096 characters by default. */
  deltaCoalescing?: DeltaCoalescing;
  /** Argument text a tool call must reach before it streams as `tool_call_delta`; 256 by default. */
  toolArgsStreamMinChars?: number;
  /** Per model call, unless the task's model config sets `timeout_ms`. */
  llmTimeoutMs: number;
  /** Per model attempt, unless the model config sets `first_byte_timeout_ms`; none: only llmTimeoutMs. */
  firstByteTimeoutMs?: number;
  /** Per model attempt, unless the model config sets `idle_timeout_ms`; none: only llmTimeoutMs. */
  idleTimeoutMs?: number;
  /** Where model keys' shared limits are held (KV mesh_model_limits); none: limits are not enforced. */
  keyLimits?: SharedKeyLimits;
  /** Sub-tasks (agent tool calls) one task may start across its attempts; 8 by default. */
  maxSubtasksPerTask?: number;
  /** Prices of models (MODEL_PRICES); none: no task has a cost. */
  prices?: ModelPriceTable;
  /** Where finished tasks' usage is added to their account's day (AccountUsageBatcher); none: not recorded. */
  accountUsage?: AccountDays;
  log: Logger;
  /** By default the instruments of the global meter provider (so the runner is made after telemetry starts). */
  metrics?: ExecutorMetrics;
  /** Where running tasks' secrets are held for the log and span filters; a private set by default. */
  openSecrets?: OpenSecrets;
  /** Where tasks waiting for approval are kept (KV mesh_parked_tasks); none: a call needing approval fails. */
  parkedTasks?: ParkedTaskStore;
  /** Approval timeouts; 24 h by default, cut below 24 h of event retention. */
  approvals?: ApprovalSettings;
  /**
   * This executor instance and the question to another whether it still runs a task (attempt-owners.ts);
   * none: records name no instance and a redelivery does not ask (tests of one runner).
   */
  owners?: Pick<AttemptOwners, 'instance' | 'runs'>;
  /**
   * The executor's heartbeat clock (heartbeat-clock.ts): after a stall of the process an attempt checks it
   * still owns its task before its next model or tool call. None: no check.
   */
  clock?: Pick<HeartbeatClock, 'stalls'>;
  now?: () => number;
}

export interface Delivery {
  /** JetStream's delivery count of the message: 1 for the first attempt. */
  attempt: number;
  headers?: MsgHdrs;
  /** The task's slot, lent out while it waits for a sub-task; none: waits keep it (a runner tested alone). */
  slot?: TaskSlot;
}
