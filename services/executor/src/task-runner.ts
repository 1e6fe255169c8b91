/**
 * One attempt of one assembled task, from its event stream being opened to its terminal event and final
 * status. The attempt number is JetStream's delivery count, or one past the highest attempt in the task's
 * events when that count was handed out before. Before anything runs it honours what earlier attempts and
 * other services left: a terminal event already written (a crashed attempt had finished), too many
 * attempts that did work (distinct `attempt`s in the task's events: a delivery lost before it wrote
 * anything does not count; JetStream's own delivery limit is a larger backstop), a vault sealed for a key
 * this executor lacks (handed back for one that holds it, until the last delivery ends the task), or a
 * cancel requested before the start. Then it opens the vault
 * in memory, runs the agent loop under an abort controller for cancel and deadline, and writes exactly one
 * terminal event.
 *
 * The vault's values, and what the task's tools derive from them, are the attempt's secrets: scrubbed from
 * its events (TaskEventSink), from every tool outcome (tools/tool-dispatch.ts), and, held in the executor's open
 * secrets from before the vault opens until the attempt's span has ended, from every log line and span.
 *
 * A redelivery resumes from the task's own event log (resume/resume-point.ts): it writes `attempt_started`
 * first, then the loop goes on from the answered turns, runs only the calls left without a result, and
 * runs each tool only once its `tool_start` is stored.
 *
 * Spend: the task's model calls are priced by the executor's table and counted across attempts (from the
 * earlier attempts' `step_finished` events); the attempt that writes the terminal event adds the task's
 * total to its account's day (`mesh_account_usage`) once that event is stored (beside the final status
 * write, before the message is settled), so one task is added once. A crash in between loses that task's
 * addition (never doubles it).
 *
 * Approval: calls that need a person's approval park the task (approval/task-parking.ts) and the delivery
 * is acked; the parked task queued again (RESUMED_PARK_HEADER) resumes from its events like a redelivery,
 * after its decisions are written (approval/approval-settlement.ts).
 *
 * What the message should get afterwards is returned as a disposition; the consumer acts on it.
 */
import {
  EventStreamConflictError,
  readTaskEventLog,
  type TaskUsage,
  TaskEventWriter,
  type ParkedTaskStore,
  type TaskStatusStore,
  type ThreadStore,
  type VersionedTaskStatus,
} from '@agentmesh/bus';
import {
  ErrorCode,
  MODEL_APIS,
  OPENAI_COMPATIBLE_PROVIDERS,
  finalStatusFields,
  isFinalTaskStatus,
  utcDay,
  modelApiKeyVaultEntry,
  nativeClassesOf,
  RESUMED_PARK_HEADER,
  taskAssembledSubject,
  type AssembledTask,
  type ClearVault,
  otelTraceIdOf,
  type McpServerConnection,
  type EventAgentVersion,
  type ChatMessage,
  type TerminalEvent,
  type ToolDefinition,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { injectTraceContext, taskParentContext, type Logger } from '@agentmesh/runtime';
import { openTaskVault, VaultTamperedError, type VaultKeyring } from '@agentmesh/vault';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { context, type Span } from '@opentelemetry/api';
import {
  runAgentLoop,
  type AgentTask,
  type ChatModel,
  type LoopOutcome,
  type LoopResult,
} from './agent-loop.js';
import { releaseLeftPark, settleApprovals } from './approval/approval-settlement.js';
import { parkTask, type ApprovalSettings } from './approval/task-parking.js';
import type { DeadLetterRecorder } from './dead-letter-listener.js';
import { ExecutorMetrics, type TaskMetrics } from './executor-metrics.js';
import { XmlToolProtocolModel } from './xml-protocol/index.js';
import { FallbackModel, type ModelChoice } from './model-choice/fallback-model.js';
import { keyIdOf, type SharedKeyLimits } from './model-choice/shared-key-limits.js';
import { isKnownApi, isKnownProvider } from './llm/index.js';
import { agentSpanOptions, inSpan, markFailed } from './gen-ai-spans.js';
import { renderVariables } from './prompt-variables.js';
import type { RunningTasks } from './running-tasks.js';
import { AbortCause, TaskAbort, type TaskAbortReason } from './task-abort.js';
import { derivedSecrets, OpenSecrets, SecretScrubber } from './secrets/index.js';
import { TaskEventSink, type DeltaCoalescing } from './task-event-sink.js';
import { ownershipLost, runningInstance, StatusConflict, statusConflict } from './attempt-status.js';
import type { HeartbeatClock } from './heartbeat-clock.js';
import type { AttemptOwners } from './attempt-owners.js';
import { resumePointOf, type ResumePoint } from './resume/resume-point.js';
import { toolExecutor, type ToolRunners } from './tools/tool-dispatch.js';
import { appendThreadTurn, releaseThread } from './thread-turns.js';
import type { TaskAccount, TaskContextValues } from './tools/index.js';
import { ToolCallError } from './tools/tool-errors.js';
import { SubtaskFanOut } from './tools/sub-agent/index.js';

const DEFAULT_MAX_SUBTASKS_PER_TASK = 8;
import { priceOf, type ModelPriceTable } from './budget/model-prices.js';
import { TaskSpend } from './budget/task-spend.js';

/** What the consumer does with the task's message once the attempt is over. */
export const AttemptDisposition = {
  /** The task has its terminal event. */
  ACK: 'ack',
  /** The task ended without running and must never be delivered again. */
  TERM: 'term',
  /** The executor is stopping: the task goes back to the queue for another instance. */
  HAND_BACK: 'hand_back',
  /**
   * No key of this executor opens the task's vault (a key rotation under way): the task goes back to the
   * queue after a pause, for an executor that holds the key.
   */
  HAND_BACK_LATER: 'hand_back_later',
  /** Another executor writes this task's events now: leave the message to it. */
  ABANDON: 'abandon',
} as const;
export type AttemptDisposition = (typeof AttemptDisposition)[keyof typeof AttemptDisposition];

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
  accountUsage?: { add(accountId: string, day: string, usage: TaskUsage): Promise<unknown> };
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
}

export class TaskRunner {
  readonly #metrics: ExecutorMetrics;
  readonly #openSecrets: OpenSecrets;

  constructor(private readonly deps: TaskRunnerDependencies) {
    this.#metrics = deps.metrics ?? new ExecutorMetrics();
    this.#openSecrets = deps.openSecrets ?? new OpenSecrets();
  }

  async run(task: AssembledTask, delivery: Delivery): Promise<AttemptDisposition> {
    const meta = task.task_meta;
    const { name, ...options } = agentSpanOptions(meta, delivery.attempt);
    // Held until the span has ended: it is exported (and its status message filtered) when it ends.
    const secrets = new SecretScrubber();
    const release = this.#openSecrets.hold(secrets);
    try {
      // A sub-task's spans join its root task's trace.
      return await context.with(taskParentContext(delivery.headers, otelTraceIdOf(meta)), () =>
        inSpan(name, options, (span) => this.#run(task, delivery, { span, secrets })),
      );
    } finally {
      release();
    }
  }

  async #run(
    task: AssembledTask,
    delivery: Delivery,
    { span, secrets }: { span: Span; secrets: SecretScrubber },
  ): Promise<AttemptDisposition> {
    const { trace_id: traceId, account_id: accountId } = task.task_meta;
    const metrics = this.#metrics.startTask();
    const delivered = delivery.attempt;
    let attempt = delivered;
    const writerOptions = {
      accountId,
      traceId,
      attempt,
      headers: () => injectTraceContext(),
      ...agentVersionOf(task),
    };
    // A parked task queued again starts its delivery count at 1, but has events to resume from.
    const queuedAgain = delivery.headers?.has(RESUMED_PARK_HEADER) === true;
    // Only a redelivery can find events of an earlier attempt (see TaskEventWriter.first).
    let writer =
      attempt === 1 && !queuedAgain
        ? TaskEventWriter.first(this.deps.js, writerOptions)
        : await TaskEventWriter.open(this.deps.js, this.deps.jsm, writerOptions);
    if (writer.terminal) {
      this.deps.log.info({ attempt }, 'task had already ended; acknowledging the redelivery');
      await this.#recordFinalStatus(task, writer.terminal.attempt, writer.terminal);
      return AttemptDisposition.ACK;
    }
    // A redelivery does nothing while another live attempt runs the task (attempt-owners.ts): the server
    // redelivered it because it missed that attempt's heartbeats (it stalled), not because the attempt
    // died. Such a delivery writes no event and so does not count as a work attempt.
    let found: VersionedTaskStatus | undefined;
    const owners = this.deps.owners;
    if (owners !== undefined && (delivered > 1 || queuedAgain)) {
      found = await this.deps.statuses.getVersioned(accountId, traceId);
      const owner = runningInstance(found?.record);
      if (owner !== undefined && (await owners.runs(owner, accountId, traceId))) {
        this.deps.log.info(
          { delivered, executor_instance: owner },
          'another attempt of this task is alive; leaving the delivery to it',
        );
        return AttemptDisposition.ABANDON;
      }
    }
    // Read only when earlier attempts wrote something: a first delivery, or one after deaths before any
    // work, costs no read.
    const earlierEvents =
      writer.seq === 0
        ? []
        : await readTaskEventLog(this.deps.jsm, { accountId, traceId, throughSeq: writer.seq });
    let resume = writer.seq === 0 ? undefined : resumePointOf(earlierEvents);
    // The attempt is JetStream's delivery count, unless the log already has events of that number or a
    // later one: a replicated consumer that changed leader can deliver a task again with a count it had
    // already handed out (seen on a 3-node cluster after a member was paused). Two writers with one
    // number would make the clients' rule (drop earlier attempts' text) and the work-attempt count wrong.
    const logged = resume === undefined ? 0 : resume.lastAttempt;
    if (logged >= attempt) {
      this.deps.log.info(
        { delivered, attempt: logged + 1 },
        'the delivery count was used before; renumbered',
      );
      attempt = logged + 1;
      writer = writer.asAttempt(attempt);
    }
    // Sub-tasks earlier attempts started: cancelled if the task ends in error without this attempt
    // running their calls again (a cancel before it started, out of attempts).
    const subtasks = resume?.subtaskCallIds.size ? { subtaskCallIds: resume.subtaskCallIds } : {};
    const workAttempts = new Set(resume?.workAttempts).add(attempt).size;
    if (workAttempts > this.deps.maxDeliver || delivered >= this.#maxDeliveries) {
      return this.#endOutOfAttempts(
        task,
        { attempt, delivered, workAttempts },
        writer,
        { span, metrics, ...subtasks },
        resume,
      );
    }
    const kid = task.runtime_config.vault.kid;
    if (!this.deps.keyring.has(kid)) {
      // Checked before the status says `running`: the task is not this executor's to run. A cancelled
      // one is ended here, though, rather than passed around until its deliveries are spent.
      const current = await this.deps.statuses.get(accountId, traceId);
      if (current?.cancel_requested_at !== undefined && !isFinalTaskStatus(current.status)) {
        const outcome = failure(ErrorCode.CANCELLED, 'the task was cancelled before it started');
        const emit = () => writer.emit(outcome.type, outcome.data);
        return (await this.#finish(task, attempt, { span, metrics, ...subtasks }, emit, undefined))
          ? AttemptDisposition.ACK
          : afterConflict(attempt);
      }
      if (attempt < this.deps.maxDeliver) {
        this.deps.log.warn({ attempt, kid }, 'handing the task back: no vault key with its key id here');
        return AttemptDisposition.HAND_BACK_LATER;
      }
      this.deps.log.error({ attempt, kid }, 'no executor took the task: none holds its vault key');
      const outcome = failure(
        ErrorCode.INTERNAL,
        `no executor holds the vault key "${kid}" the task was sealed for (${attempt} deliveries); add it to VAULT_PRIVATE_KEYS`,
      );
      const emit = () => writer.emit(outcome.type, outcome.data);
      return (await this.#finish(task, attempt, { span, metrics, ...subtasks }, emit, undefined))
        ? AttemptDisposition.ACK
        : afterConflict(attempt);
    }
    if (queuedAgain && resume?.awaitingApproval.length === 0 && this.deps.parkedTasks !== undefined) {
      const parkedAttempt = Number(delivery.headers?.get(RESUMED_PARK_HEADER));
      await releaseLeftPark(this.deps.parkedTasks, task, parkedAttempt);
    }
    if (resume !== undefined && resume.awaitingApproval.length > 0) {
      const store = this.deps.parkedTasks;
      if (store === undefined)
        throw new Error('a parked task was delivered to a runner without parked tasks');
      const settled = await settleApprovals(
        {
          store,
          statuses: this.deps.statuses,
          js: this.deps.js,
          writer,
          queuedAgain,
          now: this.#now,
          statusRecord: (current, change) => this.#statusRecord(task, attempt, current, change),
        },
        task,
        resume.awaitingApproval,
      );
      if (settled.kind === 'waiting') {
        this.deps.log.info({ attempt }, 'the task waits for approval; dropping this delivery');
        return AttemptDisposition.ACK;
      }
      if (settled.kind === 'ended') {
        const outcome = settled.outcome;
        const emit = () => writer.emit(outcome.type, outcome.data);
        if (!(await this.#finish(task, attempt, { span, metrics }, emit, undefined))) {
          return afterConflict(attempt);
        }
        await settled.release();
        return AttemptDisposition.ACK;
      }
      // The log as read, and the decisions this attempt just wrote after it (no other writer can have).
      resume = resumePointOf([...earlierEvents, ...settled.events]);
      this.deps.log.info({ attempt, decided: settled.events.length }, 'approvals decided; resuming the task');
    }
    const startedAt = this.#now();
    const abort = new TaskAbort(deadlineOf(task, startedAt), this.#now);
    // Tracked before the cancel flag is read, so a cancel sent in between still reaches this attempt.
    const untrack = this.deps.running.add(accountId, traceId, abort);
    try {
      return await this.#attempt(
        task,
        attempt,
        writer,
        abort,
        { span, metrics, untrack, ...subtasks },
        secrets,
        resume,
        found,
      );
    } finally {
      untrack();
      abort.dispose();
    }
  }

  async #attempt(
    task: AssembledTask,
    attempt: number,
    writer: TaskEventWriter,
    abort: TaskAbort,
    observed: AttemptObservers,
    secrets: SecretScrubber,
    resume: ResumePoint | undefined,
    /** The record as a redelivery read it (its instance found gone), so the write needs no read. */
    found: VersionedTaskStatus | undefined,
  ): Promise<AttemptDisposition> {
    const { trace_id: traceId, account_id: accountId } = task.task_meta;
    // The cancel flag is read and `running` written in one compare-and-set: a cancel request stored in
    // between makes the write fail and the change run again on the record that carries it.
    // It never replaces an ended task's final status or a newer attempt's record (attempt-status.ts): a
    // late delivery (a first one reads no log) learns here that it has nothing left to do.
    // Nor a record that another live instance runs it (a first delivery, which asks nobody, hands such a
    // task back; its redelivery asks).
    const instance = this.deps.owners?.instance;
    const holder =
      instance === undefined ? undefined : { instance, takenFrom: runningInstance(found?.record) };
    let conflict: StatusConflict | undefined;
    const status = await this.deps.statuses.updateFrom(
      accountId,
      traceId,
      (current) => {
        conflict = statusConflict(current, attempt, holder);
        return conflict === undefined && current?.cancel_requested_at === undefined
          ? this.#statusRecord(task, attempt, current, {
              status: 'running',
              error: undefined,
              executor_instance: instance,
            })
          : undefined;
      },
      found,
    );
    if (conflict !== undefined) return this.#standDown(task, attempt, conflict);
    const spend = this.#spendOf(task, resume);
    const endWith = async (outcome: LoopOutcome, emit = () => writer.emit(outcome.type, outcome.data)) => {
      const usage = this.#addingUsage(task, spend, emit);
      const finished = await this.#finish(task, attempt, observed, usage.emit, status);
      await usage.added();
      return finished ? AttemptDisposition.ACK : afterConflict(attempt);
    };
    this.deps.log.info({ attempt }, 'task attempt started');
    if (status?.record.cancel_requested_at !== undefined) {
      this.deps.log.info({ trace_id: traceId }, 'task was cancelled before it started');
      return endWith(failure(ErrorCode.CANCELLED, 'the task was cancelled before it started'));
    }

    const unsupported = unsupportedModel(task);
    if (unsupported !== undefined) return endWith(failure(ErrorCode.INVALID_REQUEST, unsupported));
    // Nothing has been sent anywhere yet: the vault opens only if every part of the task is the one it
    // was sealed for, and a task that fails this check ends here, before any model or tool call.
    let vault: ClearVault;
    try {
      vault = openTaskVault(task, this.deps.keyring);
    } catch (error) {
      // Vault errors name the key id or the failed check, never a secret.
      if (error instanceof VaultTamperedError) {
        this.deps.log.warn(
          { err: error, workflow_id: task.task_meta.workflow_id },
          'refusing a task whose vault was not sealed for it (re-targeted, replayed or altered)',
        );
        return endWith(
          failure(
            ErrorCode.TASK_BINDING_MISMATCH,
            "the task's vault was not sealed for this task: its account, user, workflow, input, model endpoint or tools differ from what the credentials were sealed for, or it was altered; nothing was sent",
          ),
        );
      }
      const reason = error instanceof Error ? error.message : String(error);
      this.deps.log.error({ err: error }, 'could not open the task vault');
      return endWith(failure(ErrorCode.INTERNAL, `the task's vault could not be opened: ${reason}`));
    }

    secrets.addAll(Object.values(vault));
    secrets.addAll(derivedSecrets(task.runtime_config.tools, vault));
    const sink = new TaskEventSink(
      writer,
      (error) => abort.loseEventStream(error),
      secrets,
      this.deps.deltaCoalescing,
    );
    if (resume !== undefined) {
      // First of this attempt's events: what of the earlier attempts' events stands (clients drop the rest
      // of their text) and what this attempt takes over.
      sink.emit({
        type: 'attempt_started',
        data: {
          drop_text_after_seq: resume.dropTextAfterSeq,
          resumed_steps: resume.steps,
          resumed_tool_results: resume.resolvedCalls,
          rerun_call_ids: resume.pendingCalls.map((call) => call.id),
        },
      });
      this.deps.log.info(
        { attempt, resumed_steps: resume.steps, rerun_calls: resume.pendingCalls.length },
        'resuming the task from its events',
      );
    }
    const beforeCall = this.#ownershipCheck(task, attempt, abort);
    let conversation: () => readonly ChatMessage[] = () => [];
    const outcome = await this.#runLoop(
      task,
      { vault, secrets, deadline: abort.deadlineAt, beforeCall },
      sink,
      abort.signal,
      observed.metrics,
      resume,
      spend,
      (read) => (conversation = read),
    );
    if (outcome.type === 'parked') {
      return this.#park(task, attempt, outcome.data.held, sink, observed);
    }
    const reason = abort.reason;
    if (reason !== undefined && !reason.endsTask && outcome.type === 'error') {
      sink.dispose();
      if (reason.kind === AbortCause.EXECUTOR_STOPPING) {
        this.deps.log.info({ attempt }, 'handing the task back: the executor is stopping');
        return AttemptDisposition.HAND_BACK;
      }
      if (reason.kind === AbortCause.SUPERSEDED) {
        // Its message is the newer attempt's now (or acked already).
        await this.#repairStatus(task);
        return AttemptDisposition.ABANDON;
      }
      return this.#lostEventStream(task, reason, attempt);
    }
    // A thread's turn is stored before the terminal event: a client that saw `done` reads it in the thread.
    if (this.deps.threads !== undefined)
      await appendThreadTurn(this.deps.threads, task, outcome, conversation());
    return endWith(outcome, () => sink.finish(outcome));
  }

  /** Parks the task until its held calls are decided (approval/task-parking.ts); the delivery is acked. */
  async #park(
    task: AssembledTask,
    attempt: number,
    held: Parameters<typeof parkTask>[1]['held'],
    sink: TaskEventSink,
    { metrics, untrack }: AttemptObservers,
  ): Promise<AttemptDisposition> {
    const store = this.deps.parkedTasks;
    if (store === undefined) throw new Error('a task was parked by a runner without parked tasks');
    const { account_id: accountId } = task.task_meta;
    const parked = await parkTask(
      {
        store,
        statuses: this.deps.statuses,
        js: this.deps.js,
        settings: this.deps.approvals ?? DEFAULT_APPROVAL_SETTINGS,
        now: this.#now,
        statusRecord: (current, change) => this.#statusRecord(task, attempt, current, change),
      },
      {
        task,
        subject: taskAssembledSubject(accountId, nativeClassesOf(task.runtime_config.tools)),
        attempt,
        held,
        sink,
      },
    );
    sink.dispose();
    untrack?.();
    metrics.ended('parked');
    this.deps.log.info(
      { attempt, waiting: parked.waiting, calls: held.map((call) => call.callId) },
      'task parked: tool calls wait for approval; the delivery is acked',
    );
    return AttemptDisposition.ACK;
  }

  /**
   * The loop's `beforeCall`: nothing to do (no promise) unless the executor stalled since the attempt last
   * looked (heartbeat-clock.ts). Then the attempt reads its task's status record once, and stops (before
   * the call) when another attempt took the task over or it ended meanwhile: a woken executor would
   * otherwise ask the model once more before its next event write was refused.
   */
  #ownershipCheck(
    task: AssembledTask,
    attempt: number,
    abort: TaskAbort,
  ): (() => Promise<void> | undefined) | undefined {
    const clock = this.deps.clock;
    if (clock === undefined) return undefined;
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    let seen = clock.stalls();
    return () => {
      const stalls = clock.stalls();
      if (stalls === seen) return undefined;
      seen = stalls;
      return (async () => {
        try {
          const record = await this.deps.statuses.get(accountId, traceId);
          if (ownershipLost(record, attempt, this.deps.owners?.instance)) {
            this.deps.log.warn(
              { attempt, now_attempt: record?.attempt, status: record?.status },
              'the executor stood still and lost the task to another attempt; stopping before its next call',
            );
            abort.loseOwnership();
          }
        } catch (error) {
          // The event stream's fence still stops a stale attempt at its next write.
          this.deps.log.warn({ err: error }, 'could not check whether this attempt still owns its task');
        }
      })();
    };
  }

  /** The agent loop with this task's model, tools and vault; a bug inside it ends the task as INTERNAL. */
  async #runLoop(
    task: AssembledTask,
    {
      vault,
      secrets,
      deadline,
      beforeCall,
    }: {
      vault: ClearVault;
      secrets: SecretScrubber;
      deadline: number | undefined;
      beforeCall: (() => Promise<void> | undefined) | undefined;
    },
    sink: TaskEventSink,
    signal: AbortSignal,
    metrics: TaskMetrics,
    resume: ResumePoint | undefined,
    spend: TaskSpend,
    onConversation?: (read: () => readonly ChatMessage[]) => void,
  ): Promise<LoopResult> {
    const mcpServers = task.runtime_config.mcp_servers ?? [];
    let tools = task.runtime_config.tools;
    if (mcpServers.length > 0) {
      const listed = await this.#mcpTools(task, mcpServers, { vault, secrets });
      if ('failure' in listed) return listed.failure;
      tools = [...tools, ...listed.tools];
    }
    const model = task.runtime_config.model;
    const client = this.#models(task, vault, tools, resume, sink);
    const agentTask: AgentTask = {
      conversationId: task.task_meta.trace_id,
      model: {
        name: model.model_name,
        ...(model.temperature === undefined ? {} : { temperature: model.temperature }),
        ...(model.max_tokens === undefined ? {} : { max_tokens: model.max_tokens }),
      },
      messages: renderVariables(task.input.messages, task.input.variables),
      tools,
      maxSteps: task.limits.max_steps,
      ...(task.runtime_config.dynamic_tool_sources === undefined
        ? {}
        : { dynamicToolSources: task.runtime_config.dynamic_tool_sources }),
      ...(resume === undefined ? {} : { resume }),
      spend,
      budget: task.limits,
      ...(task.runtime_config.output_schema === undefined
        ? {}
        : { outputSchema: task.runtime_config.output_schema }),
    };
    try {
      return await runAgentLoop(
        agentTask,
        {
          model: client,
          executeTool: toolExecutor(this.deps.tools, {
            vault,
            account: accountOf(task),
            secrets,
            context: toolContextOf(task),
            mcpServers,
            subtasks: {
              meta: task.task_meta,
              ...(deadline === undefined ? {} : { deadline }),
              fanOut: new SubtaskFanOut(
                this.deps.maxSubtasksPerTask ?? DEFAULT_MAX_SUBTASKS_PER_TASK,
                resume?.subtaskCallIds,
              ),
              emit: sink.emit,
            },
          }),
          emit: sink.emit,
          emitDurably: sink.emitDurably,
          // The thread's turn holds the task's own messages, not the output-schema instruction the loop adds.
          ...(onConversation === undefined
            ? {}
            : {
                onConversation: (live: readonly ChatMessage[], openingLength: number) =>
                  onConversation(() => [...agentTask.messages, ...live.slice(openingLength)]),
              }),
          backpressure: sink.backpressure,
          onToolCrash: (error, tool) =>
            this.deps.log.error({ err: error, tool: tool.name }, 'tool runner threw'),
          onDynamicTools: (change, tool) => {
            const { added, replaced, rejected } = change;
            if (added.length > 0 || replaced.length > 0) {
              this.deps.log.info({ tool, added, replaced }, 'dynamic tools joined the task');
            }
            if (rejected.length > 0) this.deps.log.warn({ tool, rejected }, 'dynamic tools rejected');
          },
          metrics,
          ...(beforeCall === undefined ? {} : { beforeCall }),
          // Without a store to park in, calls needing approval are refused (a tool error), never run.
          ...(this.deps.parkedTasks === undefined ? {} : { parking: true as const }),
        },
        signal,
      );
    } catch (error) {
      this.deps.log.error({ err: error }, 'agent loop failed');
      return failure(ErrorCode.INTERNAL, 'the executor failed while running the task');
    }
  }

  /**
   * The task's models as one (model-choice/fallback-model.ts): the first, then its fallbacks, each with its
   * own key from the vault and its key's shared limits; a resumed task starts with the model its log says
   * answered last.
   */
  #models(
    task: AssembledTask,
    vault: ClearVault,
    tools: readonly ToolDefinition[],
    resume: ResumePoint | undefined,
    sink: TaskEventSink,
  ): ChatModel {
    const models = [task.runtime_config.model, ...(task.runtime_config.fallback_models ?? [])];
    const choices = models.map((model, index): ModelChoice => {
      const apiKey = vault[modelApiKeyVaultEntry(index)];
      const firstByte = model.first_byte_timeout_ms ?? this.deps.firstByteTimeoutMs;
      const idle = model.idle_timeout_ms ?? this.deps.idleTimeoutMs;
      const chatClient = this.deps.createModel({
        ...(model.api === undefined ? {} : { api: model.api }),
        provider: model.provider,
        baseUrl: model.base_url,
        timeoutMs: model.timeout_ms ?? this.deps.llmTimeoutMs,
        ...(firstByte === undefined ? {} : { firstByteTimeoutMs: firstByte }),
        ...(idle === undefined ? {} : { idleTimeoutMs: idle }),
        ...(apiKey ? { apiKey } : {}),
      });
      // Models without native function calling speak seed 003's <ACTION>/<OBSERVATION>; the adapter
      // keeps the loop (and so the event stream) the same as with function calling.
      const client =
        model.tool_protocol === 'xml' ? new XmlToolProtocolModel(chatClient, { tools }) : chatClient;
      return {
        name: model.model_name,
        ...(model.temperature === undefined ? {} : { temperature: model.temperature }),
        ...(model.max_tokens === undefined ? {} : { max_tokens: model.max_tokens }),
        client,
        ...(model.limits === undefined
          ? {}
          : { limits: { keyId: keyIdOf(apiKey, model.base_url), limits: model.limits } }),
      };
    });
    return new FallbackModel(choices, {
      ...(resume?.lastModelIndex === undefined ? {} : { startAt: resume.lastModelIndex }),
      ...(this.deps.keyLimits === undefined ? {} : { keyLimits: this.deps.keyLimits }),
      onWaiting: ({ model, limit, value }) =>
        sink.emit({ type: 'model_waiting', data: { model, limit, value } }),
      onFallback: (from, error) =>
        this.deps.log.warn(
          { model: from.model, model_index: from.index, err: error },
          'model unavailable after its retries; the next model of the agent takes the turn',
        ),
    });
  }

  /**
   * The tools of the task's MCP servers (listed by this executor: through its SSRF guard, stdio ones in the
   * sandbox), after the assembled ones. A server that cannot be listed ends the task: the agent was bound
   * to it, and running without its tools would answer something else than what was asked.
   */
  async #mcpTools(
    task: AssembledTask,
    servers: readonly McpServerConnection[],
    { vault, secrets }: { vault: ClearVault; secrets: SecretScrubber },
  ): Promise<{ tools: ToolDefinition[] } | { failure: LoopOutcome }> {
    const runner = this.deps.tools.mcp;
    if (runner === undefined) {
      return { failure: failure(ErrorCode.SERVICE_UNAVAILABLE, 'this executor cannot run MCP tools') };
    }
    try {
      const taken = task.runtime_config.tools.map((tool) => tool.name);
      const listed = await runner.toolsOf(
        { servers, vault, account: task.task_meta.account_id, scrubber: secrets },
        taken,
      );
      if (listed.skipped.length > 0) {
        this.deps.log.warn({ skipped: listed.skipped }, 'MCP tools left out: their names were taken');
      }
      return { tools: listed.tools };
    } catch (error) {
      const coded = error instanceof ToolCallError ? error : undefined;
      const message = secrets.scrub(error instanceof Error ? error.message : String(error));
      this.deps.log.warn({ err: error }, 'listing the MCP servers of the task failed');
      return {
        failure: {
          type: 'error',
          data: {
            code: coded?.code ?? ErrorCode.SERVICE_UNAVAILABLE,
            message,
            retryable: coded?.retryable ?? true,
          },
        },
      };
    }
  }

  /**
   * Publishes the terminal event and records the final status. False when another executor owns the
   * event stream; any other failure is thrown so the message is redelivered.
   */
  async #finish(
    task: AssembledTask,
    attempt: number,
    { span, metrics, untrack, subtaskCallIds }: AttemptObservers,
    emit: () => Promise<TerminalEvent>,
    /** The status this attempt stored last, so the final one is written without reading first. */
    status: VersionedTaskStatus | undefined,
  ): Promise<boolean> {
    let terminal: TerminalEvent;
    try {
      terminal = await emit();
    } catch (error) {
      if (error instanceof EventStreamConflictError) {
        this.deps.log.warn("another executor wrote this task's events; leaving the task to it");
        await this.#repairStatus(task);
        return false;
      }
      throw error;
    }
    if (terminal.type === 'error') markFailed(span, terminal.data.code, terminal.data.message);
    metrics.ended(terminal.type === 'error' ? terminal.data.code : 'done');
    // With its terminal event stored, a cancel can change nothing: stop hearing the task's status writes
    // before writing the final one, which would only come back as an echo.
    untrack?.();
    await this.#recordFinalStatus(task, attempt, terminal, status);
    if (terminal.type === 'error' && subtaskCallIds !== undefined) {
      await this.deps.tools.subAgents?.cancelSubtasks(task.task_meta, subtaskCallIds, terminal.data.code);
    }
    this.deps.log.info(
      { attempt, outcome: terminal.type, ...(terminal.type === 'error' ? { code: terminal.data.code } : {}) },
      'task attempt finished',
    );
    return true;
  }

  /** What the task has spent so far (its earlier attempts'), priced by this executor's table. */
  #spendOf(task: AssembledTask, resume: ResumePoint | undefined): TaskSpend {
    return new TaskSpend(priceOf(this.deps.prices ?? new Map(), task.runtime_config.model), resume?.spent);
  }

  /**
   * `emit` of a terminal event, and once it is stored, the task's spend added to its account's day, beside
   * the final status write (which it does not delay); `added` resolves when the addition is done, and the
   * attempt awaits it before the message is settled. A failed addition is logged, not thrown: the task has
   * ended, and its redelivery would not add it either.
   */
  #addingUsage(
    task: AssembledTask,
    spend: TaskSpend,
    emit: () => Promise<TerminalEvent>,
  ): { emit: () => Promise<TerminalEvent>; added: () => Promise<void> } {
    let adding = Promise.resolve();
    return {
      emit: async () => {
        const terminal = await emit();
        adding = this.#addUsage(task, spend);
        return terminal;
      },
      added: () => adding,
    };
  }

  async #addUsage(task: AssembledTask, spend: TaskSpend): Promise<void> {
    const { total_tokens: totalTokens } = spend.usage;
    const costUsd = spend.costUsd ?? 0;
    const store = this.deps.accountUsage;
    if (store === undefined || (totalTokens === 0 && costUsd === 0)) return;
    try {
      await store.add(task.task_meta.account_id, utcDay(new Date(this.#now())), { totalTokens, costUsd });
    } catch (error) {
      this.deps.log.error({ err: error }, "could not add the task's usage to its account's day");
    }
  }

  /**
   * Ends a task that has used up its attempts with MAX_DELIVER_EXCEEDED, without running it; the message
   * is terminated (it must not come back). The one place a task runs out of deliveries.
   */
  async #endOutOfAttempts(
    task: AssembledTask,
    { attempt, delivered, workAttempts }: { attempt: number; delivered: number; workAttempts: number },
    writer: TaskEventWriter,
    observed: AttemptObservers,
    resume: ResumePoint | undefined,
  ): Promise<AttemptDisposition> {
    const message =
      workAttempts > this.deps.maxDeliver
        ? `the task was attempted ${workAttempts} times without finishing (MAX_DELIVER ${this.deps.maxDeliver})`
        : `the task was delivered ${delivered} times without finishing (the consumer's limit, ${this.#maxDeliveries})`;
    const outcome = failure(ErrorCode.MAX_DELIVER_EXCEEDED, message);
    this.deps.log.warn({ attempt, work_attempts: workAttempts }, 'task exceeded its deliveries');
    // The earlier attempts' model calls count for the account, though this one ends the task unrun.
    const usage = this.#addingUsage(task, this.#spendOf(task, resume), () =>
      writer.emit(outcome.type, outcome.data),
    );
    const finished = await this.#finish(task, attempt, observed, usage.emit, undefined);
    await usage.added();
    if (!finished) return afterConflict(attempt);
    await this.deps.deadLetters?.add(task, { code: ErrorCode.MAX_DELIVER_EXCEEDED, message }, attempt);
    return AttemptDisposition.TERM;
  }

  get #maxDeliveries(): number {
    return this.deps.maxDeliveries ?? deliveryBackstop(this.deps.maxDeliver);
  }

  async #lostEventStream(
    task: AssembledTask,
    reason: TaskAbortReason,
    attempt: number,
  ): Promise<AttemptDisposition> {
    if (reason.cause instanceof EventStreamConflictError) {
      this.deps.log.warn("another executor wrote this task's events; leaving the task to it");
      await this.#repairStatus(task);
      return afterConflict(attempt);
    }
    throw reason.cause ?? reason;
  }

  /**
   * An attempt whose status write found the task ended, or a newer attempt's record, writes nothing: an
   * ended task's delivery is acknowledged, and a stale attempt leaves the task to the newer one (after
   * making sure the status says what a terminal event stored meanwhile says).
   */
  async #standDown(
    task: AssembledTask,
    attempt: number,
    conflict: StatusConflict,
  ): Promise<AttemptDisposition> {
    if (conflict === StatusConflict.ENDED) {
      this.deps.log.info({ attempt }, 'task had already ended; acknowledging the delivery');
      return AttemptDisposition.ACK;
    }
    if (conflict === StatusConflict.HELD) {
      this.deps.log.warn({ attempt }, 'another executor runs this task; leaving the task to it');
      return afterConflict(attempt);
    }
    this.deps.log.warn({ attempt }, 'a newer attempt runs this task; leaving the task to it');
    await this.#repairStatus(task);
    return afterConflict(attempt);
  }

  /**
   * Makes the status record say what the task's terminal event says, if it has one: the terminal event is
   * the truth, and the attempt that wrote it may have died before its final status write. Called by an
   * attempt that learns it is stale; a failure is logged (the task's redelivery repairs it too).
   */
  async #repairStatus(task: AssembledTask): Promise<void> {
    const { account_id: accountId, trace_id: traceId } = task.task_meta;
    try {
      const last = await TaskEventWriter.open(this.deps.js, this.deps.jsm, {
        accountId,
        traceId,
        attempt: 0,
      });
      if (last.terminal !== undefined) {
        await this.#recordFinalStatus(task, last.terminal.attempt, last.terminal);
      }
    } catch (error) {
      this.deps.log.warn({ err: error }, "could not check the task's status against its terminal event");
    }
  }

  async #recordFinalStatus(
    task: AssembledTask,
    attempt: number,
    terminal: TerminalEvent,
    known?: VersionedTaskStatus,
  ): Promise<void> {
    // The task list shows a finished task's run time, usage and cost without reading its events.
    const final = finalStatusFields(terminal);
    const meta = task.task_meta;
    await this.deps.statuses.updateFrom(
      meta.account_id,
      meta.trace_id,
      (current) =>
        current?.last_seq === terminal.seq && current.status === final.status
          ? undefined
          : this.#statusRecord(task, attempt, current, final),
      known,
    );
    // The run's end frees its thread (and starts the next queued run there); a redelivery does it again.
    if (this.deps.threads !== undefined) await releaseThread(this.deps.threads, task, this.deps.log);
  }

  /** `current` (or the queued record the gateway would have written) with `change` applied by this attempt. */
  #statusRecord(
    task: AssembledTask,
    attempt: number,
    current: TaskStatusRecord | undefined,
    change: Partial<TaskStatusRecord>,
  ): TaskStatusRecord {
    const meta = task.task_meta;
    const base: TaskStatusRecord = current ?? {
      trace_id: meta.trace_id,
      account_id: meta.account_id,
      workflow_id: meta.workflow_id,
      submitted_at: meta.submitted_at,
      status: 'queued',
      attempt: 0,
      updated_at: meta.submitted_at,
    };
    // The version the task runs, in every record an attempt writes: it stays whatever the agent becomes.
    const version =
      meta.agent_version === undefined || meta.agent_digest === undefined
        ? {}
        : { agent_version: meta.agent_version, agent_digest: meta.agent_digest };
    return { ...base, ...change, ...version, attempt, updated_at: new Date(this.#now()).toISOString() };
  }

  #now = (): number => (this.deps.now ?? Date.now)();
}

/** What records an attempt: its `invoke_agent` span and its metrics. */
interface AttemptObservers {
  span: Span;
  metrics: TaskMetrics;
  /** Stops tracking the attempt as running (idempotent); absent for attempts never tracked. */
  untrack?: () => void;
  /** Calls of earlier attempts that started sub-tasks (`subtask_started` in the log). */
  subtaskCallIds?: ReadonlySet<string>;
}

/** The agent version for the task's first event; none for a pre-assembled task (it names no stored agent). */
function agentVersionOf(task: AssembledTask): { agent?: EventAgentVersion } {
  const { workflow_id, agent_version: version, agent_digest: digest } = task.task_meta;
  return version === undefined || digest === undefined ? {} : { agent: { workflow_id, version, digest } };
}

/** The account the task runs for, as tools pass it on (seed 004's x-account-id / x-account-type). */
function accountOf(task: AssembledTask): TaskAccount {
  const { account_id: id, account_type: type } = task.task_meta;
  return type === undefined ? { id } : { id, type };
}

/** What the task's HTTP tools may be given through their `context_params`. */
function toolContextOf(task: AssembledTask): TaskContextValues {
  const { user_id, account_id, account_type, trace_id } = task.task_meta;
  return { user_id, account_id, account_type, trace_id, variables: task.input.variables };
}

/** Epoch ms at which this attempt must stop: the earlier of its own budget and the task's deadline. */
function deadlineOf(task: AssembledTask, startedAt: number): number | undefined {
  const candidates = [
    task.limits.deadline_ms === undefined ? undefined : startedAt + task.limits.deadline_ms,
    task.task_meta.deadline === undefined ? undefined : Date.parse(task.task_meta.deadline),
  ].filter((value): value is number => value !== undefined);
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

function unsupportedModel(task: AssembledTask): string | undefined {
  const models = [task.runtime_config.model, ...(task.runtime_config.fallback_models ?? [])];
  for (const model of models) {
    if (!isKnownApi(model.api)) {
      return `model api "${model.api}" is not supported; this executor speaks ${MODEL_APIS.join(', ')}`;
    }
    if (!isKnownProvider(model.provider)) {
      return `model provider "${model.provider}" is not supported; this executor speaks OpenAI-compatible chat completions (providers ${OPENAI_COMPATIBLE_PROVIDERS.join(', ')})`;
    }
  }
  return undefined;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const DEFAULT_APPROVAL_SETTINGS: ApprovalSettings = { defaultTimeoutMs: DAY_MS, eventRetentionMs: DAY_MS };

/** JetStream's delivery limit for a given MAX_DELIVER when none is configured: room for deaths before work. */
export function deliveryBackstop(maxDeliver: number): number {
  return 2 * maxDeliver + 1;
}

/**
 * What a message gets when its attempt found the task's events written by another: a redelivery leaves it
 * to the attempt that wrote them. A first delivery hands it back at once, though: its writer assumed an
 * empty stream without reading it (TaskEventWriter.first), and a delivery count of 1 does not prove that:
 * nats-server 2.9.10 was seen delivering a task again with a count of 1 after the executor that held it
 * was killed. Handed back, it comes again as delivery 2 and resumes from the events at once, instead of
 * after another ack_wait.
 */
function afterConflict(attempt: number): AttemptDisposition {
  return attempt === 1 ? AttemptDisposition.HAND_BACK : AttemptDisposition.ABANDON;
}

function failure(code: ErrorCode, message: string): LoopOutcome {
  return { type: 'error', data: { code, message, retryable: false } };
}
