/**
 * Accepting a task, the same for HTTP and the NATS ingress: validate → the account's daily caps → running-task and rate limits → the
 * agent exists (the account's own or the shared catalogue's; not asked of a pre-assembled payload) → trace_id (the upstream's,
 * normalised, or a new one) → idempotency claim → status `queued` → publish the ReceivedTask to
 * `mesh.tasks.received.<account>` with Nats-Msg-Id = `<account>.<trace_id>` and the trace context of a
 * `gateway.submit` span rooted in the task's trace (so the task's trace_id is the trace's id).
 *
 * Trace ids are scoped by account: status records and the stream's message ids are keyed by account and
 * trace id, so two accounts using one trace id run two tasks, and neither learns of the other.
 *
 * A sub-task (submitted by an executor on the trusted NATS subject, see nats-ingress.ts) carries its
 * `task_meta.parent`; its status record names the parent (`parent_trace_id`), and its `gateway.submit`
 * span is a child of the calling executor's tool span, in the root task's trace.
 *
 * A repeat (same idempotency key from the same account, or the same trace_id again) answers the first
 * task's reply. An idempotency key is bound to its request (a digest of the validated request is kept
 * with the claim): the same key with another request is 422 IDEMPOTENCY_KEY_REUSED, never the first
 * task's reply. A task whose publish was refused is marked so, and a repeat of it is queued again. A
 * task whose publish was never confirmed (no try answered: it may be stored and may run) stays `queued`
 * and is answered a retryable SERVICE_UNAVAILABLE naming its trace_id. A repeat of a task still
 * `queued` publishes it again, because a gateway that died between writing `queued` and publishing, or
 * an unconfirmed publish, leaves exactly that behind; within the task stream's duplicate window, the
 * stream drops the copy when the first publish did get through, so nothing runs twice.
 */
import {
  ErrorCode,
  isTerminalEvent,
  newTraceId,
  TaskStatus,
  taskEventsSubject,
  taskKey,
  taskReceivedSubject,
  type ReceivedTask,
  type SubmitTaskReply,
  type TaskParent,
  type TaskStatusRecord,
  type TaskWebhookRequest,
} from '@agentmesh/protocol';
import {
  DEFAULT_PUBLISH_RETRY,
  encodeJson,
  PublishUnconfirmedError,
  publishWithRetry,
  readLastTaskEvent,
  runEndedByStatus,
  type RunEnded,
  type IdempotencyStore,
  type TaskStatusStore,
  type ThreadStore,
} from '@agentmesh/bus';
import { injectTraceContext, taskParentContext, taskRootContext, type Logger } from '@agentmesh/runtime';
import type { SealFor } from '@agentmesh/vault';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Caller } from './auth.js';
import {
  Conflict,
  IdempotencyKeyReused,
  NotFound,
  InvalidRequest,
  RateLimited,
  Rejection,
  ServiceUnavailable,
  SubmissionUnconfirmed,
  UnknownWorkflow,
} from './errors.js';
import { SubmissionOutcome, type GatewayMetrics } from './gateway-metrics.js';
import type { PinnedVersionCheck } from './pinned-version-check.js';
import { taskPreview } from './task-preview.js';

const optionalPreview = (preview: string | undefined): { preview?: string } =>
  preview === undefined ? {} : { preview };
import { parseSubmission, type Submission } from './submission-request.js';
import type { LostTaskWatch } from './lost-task-watch.js';
import type { RunningTaskLimiter } from './running-task-limits.js';
import type { SubmissionRateLimiter } from './submission-rate-limits.js';
import type { AccountDailyCaps } from './account-daily-caps.js';

export interface TaskSubmitterOptions {
  js: JetStreamClient;
  statuses: TaskStatusStore;
  idempotency: IdempotencyStore;
  /** The executors' vault key: pre-assembled vaults are sealed for it. */
  vaultRecipient: SealFor;
  /**
   * How long after a task was queued a repeat of it may publish it again: the task stream's duplicate
   * window, inside which the stream drops a second message with the same Nats-Msg-Id.
   */
  republishWindowMs: number;
  /** Refuses submissions beyond the configured tasks per second; none: no limit. */
  rateLimiter?: SubmissionRateLimiter;
  /** Refuses submissions beyond the configured tasks running at once; none: no limit. */
  runningLimiter?: RunningTaskLimiter;
  /** Keeps each published task until its end, to publish it again if the task queue loses it. */
  lostTasks?: LostTaskWatch;
  /** Refuses submissions of accounts past their daily token or cost cap; none: no caps. */
  dailyCaps?: AccountDailyCaps;
  /**
   * Whether the account may run an agent of this workflow id (its own, else the shared catalogue's); a
   * submission naming none is refused NOT_FOUND before anything is stored or published. None: not asked
   * (the assembler fails the task instead).
   */
  agentExists?: (accountId: string, workflowId: string) => Promise<boolean>;
  /** Refuses a pin (`workflow_id@version`) the account's agent does not keep; none: the assembler does. */
  pinnedVersions?: PinnedVersionCheck;
  /** Threads: a submission with `thread_id` claims its thread (or waits, or interrupts, by strategy). */
  threads?: ThreadStore;
  /** Cancels a thread's active run that a newer message interrupts or rolls back. */
  cancelRun?: (accountId: string, traceId: string, reason: string) => Promise<unknown>;
  /**
   * A task's own webhook (`webhook` of its submission): `check` refuses one on no registered endpoint's
   * origin before anything is stored; `store` keeps it for the task before the task is published.
   */
  taskWebhooks?: TaskWebhookRegistry;
  /** Makes `events_url` absolute. */
  publicBaseUrl?: string;
  /** Counts every submission by outcome. */
  metrics: GatewayMetrics;
  log: Logger;
  now?: () => Date;
}

export interface TaskWebhookRegistry {
  check(accountId: string, webhook: TaskWebhookRequest): Promise<Rejection | undefined>;
  store(accountId: string, traceId: string, webhook: TaskWebhookRequest): Promise<void>;
}

/** What links a sub-task to the task that submitted it; given by the trusted NATS ingress only. */
export interface SubmissionLink {
  parent: TaskParent;
  /** The submit request's headers: the calling tool span's trace context, the sub-task's spans' parent. */
  traceHeaders?: MsgHdrs;
}

export interface AcceptedTask {
  reply: SubmitTaskReply;
  /** The account the task runs for. */
  accountId: string;
  /** True when this submission repeated an earlier one and nothing was published. */
  duplicate: boolean;
}

const tracer = trace.getTracer('gateway');

/** Marks a task whose ReceivedTask never reached the bus; a repeat may queue it again. */
const NOT_QUEUED_MESSAGE = 'the task could not be queued';
const REPUBLISH_MARGIN_MS = 30_000;

export class TaskSubmitter {
  private readonly now: () => Date;

  constructor(private readonly options: TaskSubmitterOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async submit(body: unknown, caller: Caller, link?: SubmissionLink): Promise<AcceptedTask | Rejection> {
    const { metrics } = this.options;
    let outcome: AcceptedTask | Rejection;
    try {
      outcome = await this.accept(body, caller, link);
    } catch (error) {
      // The ingress answers it INTERNAL.
      metrics.taskSubmission(SubmissionOutcome.REFUSED, ErrorCode.INTERNAL);
      throw error;
    }
    if (outcome instanceof Rejection) metrics.taskSubmission(SubmissionOutcome.REFUSED, outcome.code);
    else metrics.taskSubmission(outcome.duplicate ? SubmissionOutcome.DUPLICATE : SubmissionOutcome.ACCEPTED);
    return outcome;
  }

  private async accept(
    body: unknown,
    caller: Caller,
    link: SubmissionLink | undefined,
  ): Promise<AcceptedTask | Rejection> {
    const submission = parseSubmission(body, caller, this.options.vaultRecipient, link?.parent);
    if (submission instanceof Rejection) return submission;
    const { pinnedVersions } = this.options;
    if (pinnedVersions !== undefined && submission.agentVersion !== undefined) {
      const { accountId, workflowId, agentVersion } = submission;
      const unknown = await this.bus('agent registry', () =>
        pinnedVersions(accountId, workflowId, agentVersion),
      );
      if (unknown !== undefined) return unknown;
    }
    const dailyCaps = this.options.dailyCaps;
    if (dailyCaps !== undefined) {
      const capped = await this.bus('account usage', () => dailyCaps.check(submission.accountId));
      if (capped !== undefined) return capped;
    }
    // The running-tasks slot first: a submission it refuses spends no token of the per-second rate.
    const slot = this.options.runningLimiter?.reserve(caller, submission.accountId);
    if (slot instanceof RateLimited) return slot;
    let outcome: AcceptedTask | Rejection | undefined;
    try {
      const limited = this.options.rateLimiter?.admit(caller, submission.accountId);
      outcome = limited ?? (await this.acceptAdmitted(submission, link));
      return outcome;
    } finally {
      // Only a task published by this submission holds its slot until it ends.
      if (outcome !== undefined && !(outcome instanceof Rejection) && !outcome.duplicate) {
        slot?.keep(outcome.reply.trace_id);
      } else {
        slot?.release();
      }
    }
  }

  private async acceptAdmitted(
    submission: Submission,
    link: SubmissionLink | undefined,
  ): Promise<AcceptedTask | Rejection> {
    const unknown = await this.unknownWorkflow(submission);
    if (unknown !== undefined) return unknown;
    const noThread = await this.unknownThread(submission);
    if (noThread !== undefined) return noThread;
    const refusedWebhook = await this.refusedWebhook(submission);
    if (refusedWebhook !== undefined) return refusedWebhook;
    let traceId = submission.traceId ?? newTraceId();
    if (submission.idempotencyKey !== undefined) {
      const key = submission.idempotencyKey;
      const claim = await this.bus('idempotency', () =>
        this.options.idempotency.claim(submission.accountId, key, traceId, submission.request),
      );
      if (claim instanceof Rejection) return claim;
      if (!claim.sameRequest) {
        this.options.log.info(
          { account_id: submission.accountId },
          'idempotency key reused with another request',
        );
        return new IdempotencyKeyReused();
      }
      traceId = claim.traceId;
    }
    const span = tracer.startSpan(
      'gateway.submit',
      {
        attributes: {
          'agentmesh.account_id': submission.accountId,
          'agentmesh.workflow_id': submission.workflowId,
        },
      },
      link === undefined
        ? taskRootContext(traceId)
        : taskParentContext(link.traceHeaders, link.parent.root_trace_id),
    );
    try {
      const outcome = await context.with(trace.setSpan(context.active(), span), () =>
        this.enqueue(submission, traceId),
      );
      if (outcome instanceof Rejection) span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.code });
      else span.setAttribute('agentmesh.duplicate', outcome.duplicate);
      return outcome;
    } finally {
      span.end();
    }
  }

  private async enqueue(submission: Submission, traceId: string): Promise<AcceptedTask | Rejection> {
    const { accountId } = submission;
    const submittedAt = this.now();
    const task = submission.build(traceId, submittedAt);
    if (task instanceof Rejection) return task;

    const queued: TaskStatusRecord = {
      trace_id: traceId,
      account_id: accountId,
      workflow_id: submission.workflowId,
      status: TaskStatus.QUEUED,
      attempt: 0,
      submitted_at: task.task_meta.submitted_at,
      updated_at: submittedAt.toISOString(),
      ...(task.task_meta.parent === undefined ? {} : { parent_trace_id: task.task_meta.parent.trace_id }),
      // A pinned version is known now; the digest (and an unpinned task's version) once it is assembled.
      ...(submission.agentVersion === undefined ? {} : { agent_version: submission.agentVersion }),
      ...(submission.threadId === undefined ? {} : { thread_id: submission.threadId }),
      ...optionalPreview(taskPreview(task.input.messages)),
    };
    // A new trace id is the common case: one create. Only a trace id that has a record already is read.
    const stored = await this.bus('task status', async () =>
      (await this.options.statuses.create(queued))
        ? queued
        : this.options.statuses.update(accountId, traceId, (current) =>
            current === undefined || neverQueued(current) ? queued : undefined,
          ),
    );
    if (stored instanceof Rejection) return stored;
    if (stored === undefined) throw new Error('a task status update returned no record');
    if (stored !== queued) return this.repeat(submission, stored);
    const webhook = submission.webhook;
    const taskWebhooks = this.options.taskWebhooks;
    if (webhook !== undefined && taskWebhooks !== undefined) {
      // Before the task is published, so its first status write already finds it.
      const kept = await this.bus('task webhook', () => taskWebhooks.store(accountId, traceId, webhook));
      if (kept instanceof Rejection) {
        await this.markNotQueued(accountId, traceId);
        return kept;
      }
    }

    if (submission.threadId !== undefined) {
      const admitted = await this.admitToThread(submission, submission.threadId, task);
      if (admitted !== undefined) return admitted;
    }
    const unpublished = await this.publish(task, accountId);
    if (unpublished) return unpublished;
    this.options.log.info(
      {
        account_id: accountId,
        workflow_id: submission.workflowId,
        pre_assembled: task.runtime_config !== undefined,
      },
      'task accepted',
    );
    return { reply: this.replyFor(accountId, traceId), accountId, duplicate: false };
  }

  /** A task webhook on no registered endpoint's origin (or with webhooks not served here) is refused. */
  private async refusedWebhook(submission: Submission): Promise<Rejection | undefined> {
    const webhook = submission.webhook;
    if (webhook === undefined) return undefined;
    const taskWebhooks = this.options.taskWebhooks;
    if (taskWebhooks === undefined) return new InvalidRequest('this gateway does not take task webhooks');
    const refused = await this.bus('webhook endpoints', () =>
      taskWebhooks.check(submission.accountId, webhook),
    );
    return refused;
  }

  /**
   * Refuses a task whose agent does not exist before its idempotency key is claimed or its status
   * written, so a refused submission leaves nothing behind. Asked after the limits: a caller sending
   * unknown names spends its rate like any other, and a name the gateway's live mirror of `mesh_agents`
   * does not hold costs a KV read or two.
   */
  private async unknownWorkflow(submission: Submission): Promise<Rejection | undefined> {
    const agentExists = this.options.agentExists;
    if (agentExists === undefined || submission.preAssembled) return undefined;
    const { accountId, workflowId } = submission;
    const exists = await this.bus('agent registry', () => agentExists(accountId, workflowId));
    if (exists instanceof Rejection) return exists;
    if (exists) return undefined;
    this.options.log.info({ account_id: accountId, workflow_id: workflowId }, 'task names no agent; refused');
    return new UnknownWorkflow(accountId, workflowId);
  }

  private async unknownThread(submission: Submission): Promise<Rejection | undefined> {
    if (submission.threadId === undefined) return undefined;
    const threads = this.options.threads;
    if (threads === undefined) return new ServiceUnavailable('threads are not available on this gateway');
    if (submission.preAssembled) return new InvalidRequest('a pre-assembled task cannot run in a thread');
    const threadId = submission.threadId;
    const found = await this.bus('threads', () => threads.get(submission.accountId, threadId));
    if (found instanceof Rejection) return found;
    if (found === undefined) return new NotFound(`no thread ${threadId} in this account`);
    // A thread with a retention sheds what it no longer keeps as it is written to (the assembler leaves
    // those entries out of the history either way, so a failed purge only postpones it).
    await threads
      .purgeExpired(submission.accountId, threadId, found.record)
      .catch((error: unknown) =>
        this.options.log.warn({ err: error, account_id: submission.accountId }, 'thread purge failed'),
      );
    return undefined;
  }

  /**
   * Claims the task's thread (ThreadStore.admit). Undefined: the task has the thread and is published now.
   * Otherwise the answer: queued behind the active run (published when it is promoted), or refused.
   */
  private async admitToThread(
    submission: Submission,
    threadId: string,
    task: ReceivedTask,
  ): Promise<AcceptedTask | Rejection | undefined> {
    const threads = this.options.threads!;
    const { accountId } = submission;
    const traceId = task.task_meta.trace_id;
    const admission = await this.bus('threads', () =>
      threads.admit(
        accountId,
        threadId,
        { trace_id: traceId, task },
        submission.threadStrategy,
        this.threadRunEnded,
      ),
    );
    if (admission instanceof Rejection) {
      await this.markRefused(accountId, traceId, ErrorCode.SERVICE_UNAVAILABLE, admission.message);
      return admission;
    }
    switch (admission.kind) {
      case 'run':
        return undefined;
      case 'not_found':
        await this.markRefused(accountId, traceId, ErrorCode.NOT_FOUND, 'the thread was deleted');
        return new NotFound(`no thread ${threadId} in this account`);
      case 'busy':
        await this.markRefused(accountId, traceId, ErrorCode.CONFLICT, 'the thread has an active run');
        return new Conflict(`thread ${threadId} has an active run`, { active_trace_id: admission.active });
      case 'cancel_active':
        await this.options
          .cancelRun?.(accountId, admission.active, `${admission.mode}ed by a newer message (${traceId})`)
          .catch((error: unknown) =>
            this.options.log.warn(
              { err: error, account_id: accountId },
              'active thread run could not be cancelled',
            ),
          );
        break;
      case 'queued':
        break;
    }
    this.options.log.info(
      { account_id: accountId, thread_id: threadId, admission: admission.kind },
      "task queued behind its thread's active run",
    );
    return { reply: this.replyFor(accountId, traceId), accountId, duplicate: false };
  }

  /**
   * Whether a thread's active run has ended: its status is final, or its terminal event is stored. The
   * executor appends the run's turn before that event and writes the final status (and frees the thread)
   * just after it, so a client continuing the thread as soon as it saw the answer (a Responses API
   * `previous_response_id`, an A2A `contextId`) finds the turn in the history instead of a 409.
   */
  private readonly threadRunEnded: RunEnded = async (accountId, traceId) => {
    if (await runEndedByStatus(this.options.statuses)(accountId, traceId)) return true;
    const jsm = await this.options.js.jetstreamManager(false);
    const last = await readLastTaskEvent(jsm, { accountId, traceId }).catch(() => undefined);
    return last !== undefined && isTerminalEvent(last);
  };

  /** Ends a task refused by its thread: it never runs, and its status says why. */
  private async markRefused(
    accountId: string,
    traceId: string,
    code: ErrorCode,
    message: string,
  ): Promise<void> {
    await this.options.statuses
      .update(accountId, traceId, (current) =>
        current?.status === TaskStatus.QUEUED && current.attempt === 0
          ? {
              ...current,
              status: TaskStatus.ERROR,
              updated_at: this.now().toISOString(),
              error: { code, message, retryable: code !== ErrorCode.NOT_FOUND },
            }
          : undefined,
      )
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'task status could not be marked'));
  }

  /** A repeat of a task this account submitted before: the first task's reply, published again if it may be lost. */
  private async repeat(submission: Submission, stored: TaskStatusRecord): Promise<AcceptedTask | Rejection> {
    const { accountId } = submission;
    const traceId = stored.trace_id;
    let republished = false;
    if (this.mayBeUnpublished(stored)) {
      const submittedAt = stored.submitted_at === undefined ? this.now() : new Date(stored.submitted_at);
      const task = submission.build(traceId, submittedAt);
      if (task instanceof Rejection) return task;
      if (submission.threadId !== undefined) {
        // Admitting again is idempotent: a run already active or queued stays where it is.
        const admitted = await this.admitToThread(submission, submission.threadId, task);
        if (admitted instanceof Rejection) return admitted;
        if (admitted !== undefined) return { ...admitted, duplicate: true };
      }
      const unpublished = await this.publish(task, accountId);
      if (unpublished) return unpublished;
      republished = true;
    }
    this.options.log.info(
      { account_id: accountId, duplicate: true, republished },
      'task submission repeated',
    );
    return { reply: this.replyFor(accountId, traceId), accountId, duplicate: true };
  }

  /**
   * Still queued with no attempt, and recent enough that the stream would drop a second copy. A safety
   * margin keeps a publish that lands just as the window closes from running the task twice.
   */
  private mayBeUnpublished(stored: TaskStatusRecord): boolean {
    const queuedFor = this.now().getTime() - Date.parse(stored.updated_at);
    return (
      stored.status === TaskStatus.QUEUED &&
      stored.attempt === 0 &&
      queuedFor < this.options.republishWindowMs - REPUBLISH_MARGIN_MS
    );
  }

  /**
   * Publishes the ReceivedTask. A refused publish marks the task not queued; an unconfirmed one leaves
   * it `queued` (it may run), and either is answered SERVICE_UNAVAILABLE.
   */
  private async publish(task: ReceivedTask, accountId: string): Promise<Rejection | undefined> {
    const traceId = task.task_meta.trace_id;
    try {
      // A try that got no answer (NATS away, a reconnect) is sent again with the same id: stored once.
      const message = encodeJson(task);
      const { ack } = await publishWithRetry(
        this.options.js,
        taskReceivedSubject(accountId),
        message,
        { msgID: taskKey(accountId, traceId), headers: injectTraceContext() },
        {
          ...DEFAULT_PUBLISH_RETRY,
          onRetry: ({ attempt, error }) =>
            this.options.log.warn(
              { err: error, account_id: accountId, attempt },
              'task publish unanswered; retrying',
            ),
        },
      );
      this.options.lostTasks?.published({ accountId, traceId, message }, ack.seq);
      return undefined;
    } catch (error) {
      if (error instanceof PublishUnconfirmedError) {
        // Marking it failed would be a lie if a try was stored: the task may run. A retry with its
        // trace_id is a repeat, published again under the same Nats-Msg-Id (stored once).
        this.options.log.warn(
          { err: error, account_id: accountId },
          'task publish unconfirmed; status left queued, the caller may retry with the trace_id',
        );
        return new SubmissionUnconfirmed(traceId, { cause: error });
      }
      this.options.log.error({ err: error, account_id: accountId }, 'task could not be published');
      await this.markNotQueued(accountId, traceId);
      return new ServiceUnavailable(`${NOT_QUEUED_MESSAGE}; retry`, { cause: error });
    }
  }

  private replyFor(accountId: string, traceId: string): SubmitTaskReply {
    return {
      trace_id: traceId,
      events_subject: taskEventsSubject(accountId, traceId),
      events_url: `${this.options.publicBaseUrl ?? ''}/v1/tasks/${traceId}/events`,
    };
  }

  private async markNotQueued(accountId: string, traceId: string): Promise<void> {
    await this.options.statuses
      .update(accountId, traceId, (current) =>
        current?.status === TaskStatus.QUEUED && current.attempt === 0
          ? {
              ...current,
              status: TaskStatus.ERROR,
              updated_at: this.now().toISOString(),
              error: { code: ErrorCode.SERVICE_UNAVAILABLE, message: NOT_QUEUED_MESSAGE, retryable: true },
            }
          : undefined,
      )
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'task status could not be marked'));
  }

  private async bus<T>(what: string, call: () => Promise<T>): Promise<T | ServiceUnavailable> {
    try {
      return await call();
    } catch (error) {
      this.options.log.error({ err: error }, `${what} unavailable`);
      return new ServiceUnavailable(`${what} is unavailable right now; retry`, { cause: error });
    }
  }
}

function neverQueued(record: TaskStatusRecord): boolean {
  return (
    record.status === TaskStatus.ERROR &&
    record.attempt === 0 &&
    record.error?.code === ErrorCode.SERVICE_UNAVAILABLE &&
    record.error.message === NOT_QUEUED_MESSAGE
  );
}
