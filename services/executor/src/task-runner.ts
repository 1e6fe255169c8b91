/**
 * One attempt of one assembled task, from its event stream being opened to its terminal event and final
 * status. Its states and the conditions that move it between them are a table (attempt/attempt-lifecycle.ts):
 * delivered → checked → starting → running → ending, each able to stop it (ended already, left to a live
 * attempt, handed back, parked, superseded, finished, dead-lettered). This class does each state's work and
 * asks the table where to go; `#run` is that loop.
 *
 * The attempt number is JetStream's delivery count, or one past the highest attempt in the task's events
 * when that count was handed out before. Before anything runs it honours what earlier attempts and other
 * services left: a terminal event already written (a crashed attempt had finished), too many attempts that
 * did work (distinct `attempt`s in the task's events: a delivery lost before it wrote anything does not
 * count; JetStream's own delivery limit is a larger backstop), a vault sealed for a key this executor lacks
 * (handed back for one that holds it, until the last delivery ends the task), or a cancel requested before
 * the start. Then it opens the vault in memory, runs the agent loop (attempt/task-loop.ts) under an abort
 * controller for cancel and deadline, and writes exactly one terminal event (attempt/attempt-ending.ts).
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
  readTaskEventLog,
  TaskEventWriter,
  type TaskEventWriterOptions,
  type VersionedTaskStatus,
} from '@agentmesh/bus';
import {
  ErrorCode,
  isFinalTaskStatus,
  nativeClassesOf,
  RESUMED_PARK_HEADER,
  taskAssembledSubject,
  type AssembledTask,
  type ClearVault,
  otelTraceIdOf,
  type EventAgentVersion,
  type ChatMessage,
  type TaskEvent,
} from '@agentmesh/protocol';
import { injectTraceContext, taskParentContext } from '@agentmesh/runtime';
import { openTaskVault, VaultTamperedError } from '@agentmesh/vault';
import { context, type Span } from '@opentelemetry/api';
import type { HeldCall, LoopOutcome } from './agent-loop.js';
import { releaseLeftPark, settleApprovals, type ApprovalSettlement } from './approval/approval-settlement.js';
import { parkTask, type ApprovalSettings } from './approval/task-parking.js';
import { AttemptEnding, type AttemptObservers } from './attempt/attempt-ending.js';
import type { AttemptDisposition } from './attempt/attempt-lifecycle.js';
import {
  AttemptEnd,
  AttemptState,
  EndingCause,
  deliveryBackstop,
  dispositionOf,
  failure,
  fromChecked,
  fromDelivered,
  fromEnding,
  fromRunning,
  fromStarting,
  type Ending,
  type Step,
} from './attempt/attempt-lifecycle.js';
import type { Delivery, TaskRunnerDependencies } from './attempt/runner-dependencies.js';
import { AttemptStatusWrites } from './attempt/status-writes.js';
import { TaskLoop, unsupportedModel } from './attempt/task-loop.js';
import { runningInstance, StatusConflict, statusConflict } from './attempt-status.js';
import type { TaskSpend } from './budget/task-spend.js';
import { ExecutorMetrics, type TaskMetrics } from './executor-metrics.js';
import { agentSpanOptions, inSpan } from './gen-ai-spans.js';
import { resumePointOf, type ResumePoint } from './resume/resume-point.js';
import { derivedSecrets, OpenSecrets, SecretScrubber } from './secrets/index.js';
import { TaskAbort } from './task-abort.js';
import { KEPT_SLOT } from './task-slot.js';
import { TaskEventSink } from './task-event-sink.js';
import { appendThreadTurn } from './thread-turns.js';

export { AttemptDisposition, deliveryBackstop } from './attempt/attempt-lifecycle.js';
export type { Delivery, ModelClientOptions, TaskRunnerDependencies } from './attempt/runner-dependencies.js';

/** One attempt as it goes through its states: what each state found, for those after it. */
interface AttemptRun {
  readonly task: AssembledTask;
  readonly delivery: Delivery;
  /** JetStream's delivery count. */
  readonly delivered: number;
  /** A parked task queued again: its delivery count starts at 1, but it has events to resume from. */
  readonly queuedAgain: boolean;
  readonly span: Span;
  readonly secrets: SecretScrubber;
  readonly metrics: TaskMetrics;
  /** The delivery count, or one past the highest attempt in the log when that count was used before. */
  attempt: number;
  writer: TaskEventWriter;
  /** The status record a redelivery read (its instance found gone), so the `running` write needs no read. */
  found?: VersionedTaskStatus;
  /** The earlier attempts' events (none on a first delivery) and where the task picks up from them. */
  earlierEvents: readonly TaskEvent[];
  resume?: ResumePoint;
  /** Sub-tasks earlier attempts started: cancelled if the task ends in error without running them again. */
  subtaskCallIds?: ReadonlySet<string>;
  /** From `starting` on: the attempt's abort controller, tracked as running until `untrack`. */
  abort?: TaskAbort;
  untrack?: () => void;
  /** The record the `running` write left. */
  status?: VersionedTaskStatus;
  /** What the task spent, this attempt's model calls added as they come. */
  spend?: TaskSpend;
  vault?: ClearVault;
  sink?: TaskEventSink;
}

export class TaskRunner {
  readonly #metrics: ExecutorMetrics;
  readonly #openSecrets: OpenSecrets;
  readonly #statusWrites: AttemptStatusWrites;
  readonly #ending: AttemptEnding;
  readonly #loop: TaskLoop;

  constructor(private readonly deps: TaskRunnerDependencies) {
    this.#metrics = deps.metrics ?? new ExecutorMetrics();
    this.#openSecrets = deps.openSecrets ?? new OpenSecrets();
    this.#statusWrites = new AttemptStatusWrites(deps, this.#now);
    this.#ending = new AttemptEnding(deps, this.#statusWrites, this.#now);
    this.#loop = new TaskLoop(deps);
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
        inSpan(name, options, (span) => this.#run(task, delivery, span, secrets)),
      );
    } finally {
      release();
    }
  }

  /** The attempt's lifecycle (attempt/attempt-lifecycle.ts): each state's work, until the attempt stops. */
  async #run(
    task: AssembledTask,
    delivery: Delivery,
    span: Span,
    secrets: SecretScrubber,
  ): Promise<AttemptDisposition> {
    const run = await this.#deliver(task, delivery, span, secrets);
    try {
      let step: Step = await this.#delivered(run);
      for (;;) {
        if ('failed' in step) throw step.failed;
        if ('end' in step) {
          if (step.repairStatus === true) await this.#statusWrites.repair(task);
          return dispositionOf(step.end, run.attempt);
        }
        switch (step.to) {
          case AttemptState.CHECKED:
            step = await this.#checked(run);
            break;
          case AttemptState.STARTING:
            step = await this.#starting(run);
            break;
          case AttemptState.RUNNING:
            step = await this.#running(run);
            break;
          case AttemptState.ENDING:
            step = await this.#end(run, step.ending);
            break;
        }
      }
    } finally {
      run.untrack?.();
      run.abort?.dispose();
    }
  }

  /** Opens the task's event stream: the attempt is `delivered`. */
  async #deliver(
    task: AssembledTask,
    delivery: Delivery,
    span: Span,
    secrets: SecretScrubber,
  ): Promise<AttemptRun> {
    const { trace_id: traceId, account_id: accountId } = task.task_meta;
    const metrics = this.#metrics.startTask();
    const delivered = delivery.attempt;
    const writerOptions: TaskEventWriterOptions = {
      accountId,
      traceId,
      attempt: delivered,
      headers: () => injectTraceContext(),
      ...agentVersionOf(task),
    };
    // A parked task queued again starts its delivery count at 1, but has events to resume from.
    const queuedAgain = delivery.headers?.has(RESUMED_PARK_HEADER) === true;
    // Only a redelivery can find events of an earlier attempt (see TaskEventWriter.first).
    const writer =
      delivered === 1 && !queuedAgain
        ? TaskEventWriter.first(this.deps.js, writerOptions)
        : await TaskEventWriter.open(this.deps.js, this.deps.jsm, writerOptions);
    return {
      task,
      delivery,
      delivered,
      queuedAgain,
      span,
      secrets,
      metrics,
      attempt: delivered,
      writer,
      earlierEvents: [],
    };
  }

  /** delivered → ended already, left to a live attempt, or checked. */
  async #delivered(run: AttemptRun): Promise<Step> {
    const terminal = run.writer.terminal;
    const step = await fromDelivered({
      terminalStored: terminal !== undefined,
      liveAttemptElsewhere: () => this.#liveAttemptElsewhere(run),
    });
    if (terminal !== undefined && endsAt(step, AttemptEnd.ENDED_ALREADY)) {
      this.deps.log.info({ attempt: run.attempt }, 'task had already ended; acknowledging the redelivery');
      await this.#statusWrites.recordFinal(run.task, terminal.attempt, terminal);
    }
    return step;
  }

  /**
   * A redelivery does nothing while another live attempt runs the task (attempt-owners.ts): the server
   * redelivered it because it missed that attempt's heartbeats (it stalled), not because the attempt
   * died. Such a delivery writes no event and so does not count as a work attempt.
   */
  async #liveAttemptElsewhere(run: AttemptRun): Promise<boolean> {
    const owners = this.deps.owners;
    if (owners === undefined || (run.delivered <= 1 && !run.queuedAgain)) return false;
    const { trace_id: traceId, account_id: accountId } = run.task.task_meta;
    run.found = await this.deps.statuses.getVersioned(accountId, traceId);
    const owner = runningInstance(run.found?.record);
    if (owner === undefined || !(await owners.runs(owner, accountId, traceId))) return false;
    this.deps.log.info(
      { delivered: run.delivered, executor_instance: owner },
      'another attempt of this task is alive; leaving the delivery to it',
    );
    return true;
  }

  /**
   * Reads what earlier attempts left and numbers the attempt; then checked → ending (out of attempts, no
   * vault key, approvals ended), handed back later, parked, or starting.
   */
  async #checked(run: AttemptRun): Promise<Step> {
    const { task, writer, delivered } = run;
    const { trace_id: traceId, account_id: accountId } = task.task_meta;
    // Read only when earlier attempts wrote something: a first delivery, or one after deaths before any
    // work, costs no read.
    if (writer.seq > 0) {
      run.earlierEvents = await readTaskEventLog(this.deps.jsm, {
        accountId,
        traceId,
        throughSeq: writer.seq,
      });
      run.resume = resumePointOf(run.earlierEvents);
    }
    // The attempt is JetStream's delivery count, unless the log already has events of that number or a
    // later one: a replicated consumer that changed leader can deliver a task again with a count it had
    // already handed out (seen on a 3-node cluster after a member was paused). Two writers with one
    // number would make the clients' rule (drop earlier attempts' text) and the work-attempt count wrong.
    const logged = run.resume?.lastAttempt ?? 0;
    if (logged >= run.attempt) {
      this.deps.log.info(
        { delivered, attempt: logged + 1 },
        'the delivery count was used before; renumbered',
      );
      run.attempt = logged + 1;
      run.writer = writer.asAttempt(run.attempt);
    }
    const attempt = run.attempt;
    if (run.resume?.subtaskCallIds.size) run.subtaskCallIds = run.resume.subtaskCallIds;
    const workAttempts = new Set(run.resume?.workAttempts).add(attempt).size;
    const kid = task.runtime_config.vault.kid;
    const step = await fromChecked({
      attempt,
      delivered,
      workAttempts,
      maxDeliver: this.deps.maxDeliver,
      maxDeliveries: this.deps.maxDeliveries ?? deliveryBackstop(this.deps.maxDeliver),
      // Checked before the status says `running`: the task is not this executor's to run.
      vaultKey: { kid, held: this.deps.keyring.has(kid) },
      cancelRequested: async () => {
        const current = await this.deps.statuses.get(accountId, traceId);
        return current?.cancel_requested_at !== undefined && !isFinalTaskStatus(current.status);
      },
      approvals: () => this.#settleApprovals(run),
    });
    if (endingFor(step, EndingCause.OUT_OF_ATTEMPTS)) {
      this.deps.log.warn({ attempt, work_attempts: workAttempts }, 'task exceeded its deliveries');
    } else if (endsAt(step, AttemptEnd.HANDED_BACK_LATER)) {
      this.deps.log.warn({ attempt, kid }, 'handing the task back: no vault key with its key id here');
    } else {
      const noHolder = endingFor(step, EndingCause.NO_VAULT_KEY)?.outcome;
      if (noHolder?.type === 'error' && noHolder.data.code === ErrorCode.INTERNAL) {
        this.deps.log.error({ attempt, kid }, 'no executor took the task: none holds its vault key');
      }
    }
    return step;
  }

  /**
   * The approvals the task's log shows requested and not decided, settled from its parked entry
   * (approval/approval-settlement.ts); undefined when it waits for none. Decisions written make the
   * attempt resume from the log with them.
   */
  async #settleApprovals(run: AttemptRun): Promise<ApprovalSettlement | undefined> {
    const { task, resume, queuedAgain, attempt } = run;
    if (queuedAgain && resume?.awaitingApproval.length === 0 && this.deps.parkedTasks !== undefined) {
      const parkedAttempt = Number(run.delivery.headers?.get(RESUMED_PARK_HEADER));
      await releaseLeftPark(this.deps.parkedTasks, task, parkedAttempt);
    }
    if (resume === undefined || resume.awaitingApproval.length === 0) return undefined;
    const store = this.deps.parkedTasks;
    if (store === undefined) throw new Error('a parked task was delivered to a runner without parked tasks');
    const settled = await settleApprovals(
      {
        store,
        statuses: this.deps.statuses,
        js: this.deps.js,
        writer: run.writer,
        queuedAgain,
        now: this.#now,
        statusRecord: (current, change) => this.#statusWrites.record(task, attempt, current, change),
      },
      task,
      resume.awaitingApproval,
    );
    if (settled.kind === 'waiting') {
      this.deps.log.info({ attempt }, 'the task waits for approval; dropping this delivery');
    } else if (settled.kind === 'decided') {
      // The log as read, and the decisions this attempt just wrote after it (no other writer can have).
      run.resume = resumePointOf([...run.earlierEvents, ...settled.events]);
      this.deps.log.info({ attempt, decided: settled.events.length }, 'approvals decided; resuming the task');
    }
    return settled;
  }

  /**
   * Tracks the attempt as running and writes `running`; then starting → ended already, superseded,
   * ending (cancelled, unknown model, vault refused), or running.
   */
  async #starting(run: AttemptRun): Promise<Step> {
    const { task, attempt } = run;
    const { trace_id: traceId, account_id: accountId } = task.task_meta;
    const abort = new TaskAbort(deadlineOf(task, this.#now()), this.#now);
    run.abort = abort;
    // Tracked before the cancel flag is read, so a cancel sent in between still reaches this attempt.
    run.untrack = this.deps.running.add(accountId, traceId, abort);
    // The cancel flag is read and `running` written in one compare-and-set: a cancel request stored in
    // between makes the write fail and the change run again on the record that carries it.
    // It never replaces an ended task's final status or a newer attempt's record (attempt-status.ts): a
    // late delivery (a first one reads no log) learns here that it has nothing left to do.
    // Nor a record that another live instance runs it (a first delivery, which asks nobody, hands such a
    // task back; its redelivery asks).
    const instance = this.deps.owners?.instance;
    const holder =
      instance === undefined ? undefined : { instance, takenFrom: runningInstance(run.found?.record) };
    let conflict: StatusConflict | undefined;
    run.status = await this.deps.statuses.updateFrom(
      accountId,
      traceId,
      (current) => {
        conflict = statusConflict(current, attempt, holder);
        return conflict === undefined && current?.cancel_requested_at === undefined
          ? this.#statusWrites.record(task, attempt, current, {
              status: 'running',
              error: undefined,
              executor_instance: instance,
            })
          : undefined;
      },
      run.found,
    );
    this.#logStart(attempt, conflict);
    run.spend = this.#ending.spendOf(task, run.resume);
    const cancelRequested = run.status?.record.cancel_requested_at !== undefined;
    const step = await fromStarting({
      conflict,
      cancelRequested,
      unsupportedModel: unsupportedModel(task),
      vaultRefusal: () => this.#openVault(run),
    });
    if (conflict === undefined && cancelRequested) {
      this.deps.log.info({ trace_id: traceId }, 'task was cancelled before it started');
    }
    return step;
  }

  /**
   * What the `running` write found, logged: an attempt that found the task ended, or another attempt's
   * record, writes nothing (see the `starting` rows of the lifecycle).
   */
  #logStart(attempt: number, conflict: StatusConflict | undefined): void {
    switch (conflict) {
      case undefined:
        return this.deps.log.info({ attempt }, 'task attempt started');
      case StatusConflict.ENDED:
        return this.deps.log.info({ attempt }, 'task had already ended; acknowledging the delivery');
      case StatusConflict.HELD:
        return this.deps.log.warn({ attempt }, 'another executor runs this task; leaving the task to it');
      case StatusConflict.SUPERSEDED:
        return this.deps.log.warn({ attempt }, 'a newer attempt runs this task; leaving the task to it');
    }
  }

  /**
   * Nothing has been sent anywhere yet: the vault opens only if every part of the task is the one it was
   * sealed for, and a task that fails this check ends here, before any model or tool call. The outcome it
   * ends with, or undefined with the vault open.
   */
  #openVault(run: AttemptRun): LoopOutcome | undefined {
    const { task } = run;
    try {
      run.vault = openTaskVault(task, this.deps.keyring);
      return undefined;
    } catch (error) {
      // Vault errors name the key id or the failed check, never a secret.
      if (error instanceof VaultTamperedError) {
        this.deps.log.warn(
          { err: error, workflow_id: task.task_meta.workflow_id },
          'refusing a task whose vault was not sealed for it (re-targeted, replayed or altered)',
        );
        return failure(
          ErrorCode.TASK_BINDING_MISMATCH,
          "the task's vault was not sealed for this task: its account, user, workflow, input, model endpoint or tools differ from what the credentials were sealed for, or it was altered; nothing was sent",
        );
      }
      const reason = error instanceof Error ? error.message : String(error);
      this.deps.log.error({ err: error }, 'could not open the task vault');
      return failure(ErrorCode.INTERNAL, `the task's vault could not be opened: ${reason}`);
    }
  }

  /**
   * Runs the agent loop with the vault open; then running → parked, handed back, taken over, superseded,
   * failed, or ending with the loop's outcome.
   */
  async #running(run: AttemptRun): Promise<Step> {
    const { task, attempt, secrets, resume, vault, abort, spend } = run;
    if (vault === undefined || abort === undefined || spend === undefined) {
      throw new Error('an attempt ran before it started');
    }
    secrets.addAll(Object.values(vault));
    secrets.addAll(derivedSecrets(task.runtime_config.tools, vault));
    const sink = new TaskEventSink(
      run.writer,
      (error) => abort.loseEventStream(error),
      secrets,
      this.deps.deltaCoalescing,
    );
    run.sink = sink;
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
    const beforeCall = this.#loop.ownershipCheck(task, attempt, abort);
    let conversation: () => readonly ChatMessage[] = () => [];
    const result = await this.#loop.run(
      task,
      { vault, secrets, deadline: abort.deadlineAt, beforeCall, slot: run.delivery.slot ?? KEPT_SLOT },
      sink,
      abort.signal,
      run.metrics,
      resume,
      spend,
      (read) => (conversation = read),
    );
    const step = fromRunning({ result, abort: abort.reason });
    if (result.type === 'parked') {
      await this.#park(run, result.data.held, sink);
    } else if (!('to' in step)) {
      // The attempt ends without a terminal event: its deltas not yet written go nowhere.
      sink.dispose();
      if (endsAt(step, AttemptEnd.HANDED_BACK)) {
        this.deps.log.info({ attempt }, 'handing the task back: the executor is stopping');
      } else if (endsAt(step, AttemptEnd.SUPERSEDED)) {
        this.deps.log.warn("another executor wrote this task's events; leaving the task to it");
      }
    } else if (this.deps.threads !== undefined) {
      // A thread's turn is stored before the terminal event: a client that saw `done` reads it in the thread.
      await appendThreadTurn(this.deps.threads, task, result, conversation());
    }
    return step;
  }

  /** Parks the task until its held calls are decided (approval/task-parking.ts); the delivery is acked. */
  async #park(run: AttemptRun, held: readonly HeldCall[], sink: TaskEventSink): Promise<void> {
    const { task, attempt, metrics, untrack } = run;
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
        statusRecord: (current, change) => this.#statusWrites.record(task, attempt, current, change),
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
  }

  /**
   * Writes the terminal event (attempt/attempt-ending.ts); then ending → finished, dead-lettered, or
   * superseded. Every ending adds the task's spend to the account's day, its earlier attempts' included (a
   * task that spent and then timed out waiting for approval, or was cancelled while parked, spent all the
   * same: left out, a daily cap could be walked around); an ending's sub-tasks are cancelled unless approvals
   * ended it; a MAX_DELIVER_EXCEEDED task is dead-lettered once its event is stored.
   */
  async #end(run: AttemptRun, { cause, outcome, afterStored }: Ending): Promise<Step> {
    const { task, attempt, writer, sink, untrack, subtaskCallIds } = run;
    const observed: AttemptObservers = {
      span: run.span,
      metrics: run.metrics,
      ...(untrack === undefined ? {} : { untrack }),
      ...(subtaskCallIds === undefined || cause === EndingCause.APPROVALS ? {} : { subtaskCallIds }),
    };
    const stored = await this.#ending.write(task, attempt, observed, {
      emit:
        cause === EndingCause.ANSWERED && sink !== undefined
          ? () => sink.finish(outcome)
          : () => writer.emit(outcome.type, outcome.data),
      spend: run.spend ?? this.#ending.spendOf(task, run.resume),
      status: run.status,
    });
    if (stored) {
      await afterStored?.();
      if (cause === EndingCause.OUT_OF_ATTEMPTS && outcome.type === 'error') {
        const { code, message } = outcome.data;
        await this.deps.deadLetters?.add(task, { code, message }, attempt);
      }
    }
    return fromEnding({ cause, stored });
  }

  #now = (): number => (this.deps.now ?? Date.now)();
}

/** Whether `step` stops the attempt at `end`. */
function endsAt(step: Step, end: AttemptEnd): boolean {
  return 'end' in step && step.end === end;
}

/** The ending `step` goes to, when it goes to one for `cause`. */
function endingFor(step: Step, cause: EndingCause): Ending | undefined {
  return 'ending' in step && step.ending.cause === cause ? step.ending : undefined;
}

/** The agent version for the task's first event; none for a pre-assembled task (it names no stored agent). */
function agentVersionOf(task: AssembledTask): { agent?: EventAgentVersion } {
  const { workflow_id, agent_version: version, agent_digest: digest } = task.task_meta;
  return version === undefined || digest === undefined ? {} : { agent: { workflow_id, version, digest } };
}

/** Epoch ms at which this attempt must stop: the earlier of its own budget and the task's deadline. */
function deadlineOf(task: AssembledTask, startedAt: number): number | undefined {
  const candidates = [
    task.limits.deadline_ms === undefined ? undefined : startedAt + task.limits.deadline_ms,
    task.task_meta.deadline === undefined ? undefined : Date.parse(task.task_meta.deadline),
  ].filter((value): value is number => value !== undefined);
  return candidates.length === 0 ? undefined : Math.min(...candidates);
}

const DAY_MS = 24 * 60 * 60 * 1000;
const DEFAULT_APPROVAL_SETTINGS: ApprovalSettings = { defaultTimeoutMs: DAY_MS, eventRetentionMs: DAY_MS };
