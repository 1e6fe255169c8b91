/**
 * Runs a call of an AGENT tool as a sub-task: another agent of the same account, for the same user, asked
 * the call's `input`. The sub-task is submitted through the gateway's trusted NATS ingress
 * (`mesh.gateway.submit`), so it is a task like any other (status record, rate and running-task limits,
 * its own events and SSE), with `task_meta.parent` linking it to the call, the calling task's deadline,
 * and the call's span as its trace parent: its spans join the root task's trace. Its trace id is derived
 * from the caller's trace id and call id (subtask-identity.ts), so a call run again after its executor
 * died re-attaches to the sub-task it had started.
 *
 * The call emits `subtask_started` once the sub-task is accepted and `subtask_finished` when it ends; the
 * sub-task's answer (`done.message`) is the call's result, its error the call's error. Its end is read from
 * its status record and its terminal event (subtask-end-watch.ts), never by polling.
 *
 * A call stopped because its task ends (cancel, deadline) cancels the sub-task like the cancel API does; a
 * call stopped because this attempt only hands its task on (executor stopping, event stream lost) leaves
 * the sub-task running for the next attempt to re-attach to.
 *
 * Limits (executor config): a sub-task deeper than MAX_SUBTASK_DEPTH, or more sub-tasks per task than
 * MAX_SUBTASKS_PER_TASK (across attempts), is refused as a SUBTASK_LIMIT_EXCEEDED tool error the model
 * can answer around. While a call waits for its sub-task, its task lends its executor slot out (task-slot.ts,
 * up to MAX_WAITING_TASKS per instance): parents waiting on every slot of the mesh would otherwise leave
 * their sub-tasks none to run in.
 */
import {
  readLastTaskEvent,
  requestTaskCancel,
  type ParkedTaskStore,
  type TaskStatusStore,
} from '@agentmesh/bus';
import {
  ErrorBody,
  ErrorCode,
  EventType,
  SubmitTaskReply,
  Subjects,
  TASK_PARENT_HEADER,
  type AgentTool,
  type EventData,
  type TaskMeta,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { injectTraceContext } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { TaskAbortReason } from '../../task-abort.js';
import { KEPT_SLOT, type TaskSlot } from '../../task-slot.js';
import { toolFailure, toolSuccess, type ToolOutcome } from '../tool-outcome.js';
import { awaitFinalStatus, ForeignSubtaskError } from './subtask-end-watch.js';
import type { SubtaskFanOut } from './subtask-fan-out.js';
import { subtaskParent, subtaskTraceId } from './subtask-identity.js';

/** The events a sub-agent call adds to its task's events. */
export type SubtaskEvent =
  | { type: typeof EventType.SUBTASK_STARTED; data: EventData<'subtask_started'> }
  | { type: typeof EventType.SUBTASK_FINISHED; data: EventData<'subtask_finished'> };

export interface SubAgentToolRunnerOptions {
  nc: NatsConnection;
  jsm: JetStreamManager;
  statuses: TaskStatusStore;
  /** Parked tasks: a sub-task waiting for approval is woken to end when its parent cancels it. */
  parked?: { store: ParkedTaskStore; js: JetStreamClient };
  /** Deepest sub-task allowed (1: a top-level task's sub-tasks, but not theirs). */
  maxDepth: number;
  /** How long the gateway may take to accept a sub-task. */
  submitTimeoutMs?: number;
  now?: () => Date;
}

/** What a sub-agent call needs of its task's attempt. */
export interface SubtaskCallerContext {
  readonly meta: TaskMeta;
  /** The attempt's deadline (epoch ms): the sub-task gets it as its own. */
  readonly deadline?: number;
  /** The task's sub-tasks so far, across attempts. */
  readonly fanOut: SubtaskFanOut;
  /** Adds an event to the task's events. */
  readonly emit: (event: SubtaskEvent) => void;
  /** The task's executor slot, lent out while the call waits for its sub-task; none: kept. */
  readonly slot?: TaskSlot;
}

export interface SubAgentCall {
  readonly callId: string;
  readonly signal: AbortSignal;
  readonly task: SubtaskCallerContext;
}

const DEFAULT_SUBMIT_TIMEOUT_MS = 10_000;
const decoder = new TextDecoder();

export class SubAgentToolRunner {
  constructor(private readonly options: SubAgentToolRunnerOptions) {}

  async run(tool: AgentTool, args: Record<string, unknown>, call: SubAgentCall): Promise<ToolOutcome> {
    const { meta, fanOut } = call.task;
    const input = args['input'];
    if (typeof input !== 'string' || input.trim() === '') {
      return toolFailure(ErrorCode.INVALID_REQUEST, `${tool.name} needs a non-empty "input" string`);
    }
    const parent = subtaskParent(meta, call.callId);
    if (parent.depth > this.options.maxDepth) {
      return toolFailure(
        ErrorCode.SUBTASK_LIMIT_EXCEEDED,
        `${tool.name} cannot be called here: its sub-task would be nested ${parent.depth} deep, and sub-tasks nest at most ${this.options.maxDepth} deep; answer without it`,
        { max_depth: this.options.maxDepth },
      );
    }
    if (!fanOut.admit(call.callId)) {
      return toolFailure(
        ErrorCode.SUBTASK_LIMIT_EXCEEDED,
        `${tool.name} cannot be called: this task has started ${fanOut.started} sub-tasks, the most a task may; answer with what you have`,
        { max_subtasks: fanOut.limit },
      );
    }
    if (call.signal.aborted) return stopped(call.signal);
    const traceId = subtaskTraceId(meta.trace_id, call.callId);
    const submitted = await this.#submit(tool, input, call, traceId);
    if (!submitted.ok) {
      // An unanswered request may have been accepted all the same: nothing must run unfollowed.
      await this.#cancel(meta, traceId, 'the call that submitted it failed').catch(() => undefined);
      return submitted;
    }
    const belongs = (record: TaskStatusRecord): boolean =>
      record.parent_trace_id === meta.trace_id && record.workflow_id === tool.workflow_id;
    const stored = await this.options.statuses.get(meta.account_id, traceId).catch(() => undefined);
    if (stored !== undefined && !belongs(stored)) return foreign(tool, traceId);
    const ids = { call_id: call.callId, tool: tool.name, subtask_trace_id: traceId };
    call.task.emit({ type: EventType.SUBTASK_STARTED, data: { ...ids, workflow_id: tool.workflow_id } });
    let final: TaskStatusRecord;
    try {
      const waitForEnd = () =>
        awaitFinalStatus({
          nc: this.options.nc,
          statuses: this.options.statuses,
          accountId: meta.account_id,
          traceId,
          signal: call.signal,
          belongs,
        });
      final = await (call.task.slot ?? KEPT_SLOT).whileWaiting(waitForEnd);
    } catch (error) {
      if (error instanceof ForeignSubtaskError) return foreign(tool, traceId);
      if (!call.signal.aborted) {
        return toolFailure(
          ErrorCode.SERVICE_UNAVAILABLE,
          `the sub-task of ${tool.name} could not be followed: ${errorText(error)}`,
          { subtask_trace_id: traceId },
        );
      }
      if (endsTask(call.signal.reason)) {
        await this.#cancel(meta, traceId, 'its parent task ended').catch(() => undefined);
      }
      return stopped(call.signal);
    }
    const outcome = await this.#outcome(meta.account_id, traceId, final);
    call.task.emit({ type: EventType.SUBTASK_FINISHED, data: { ...ids, ...outcome.finished } });
    return outcome.tool;
  }

  async #submit(
    tool: AgentTool,
    input: string,
    call: SubAgentCall,
    traceId: string,
  ): Promise<{ ok: true } | (ToolOutcome & { ok: false })> {
    const { meta, deadline } = call.task;
    const headers = natsHeaders();
    headers.set('x-account-id', meta.account_id);
    if (meta.account_type !== undefined) headers.set('x-account-type', meta.account_type);
    headers.set(TASK_PARENT_HEADER, JSON.stringify(subtaskParent(meta, call.callId)));
    // The active span is the call's `execute_tool` span: the sub-task's spans hang under it.
    injectTraceContext(headers);
    const body = {
      workflow_id: tool.workflow_id,
      user_id: meta.user_id,
      messages: [{ role: 'user', content: input }],
      trace_id: traceId,
      ...(deadline === undefined ? {} : { deadline: new Date(deadline).toISOString() }),
    };
    let reply: unknown;
    try {
      const msg = await this.options.nc.request(Subjects.GATEWAY_SUBMIT, JSON.stringify(body), {
        headers,
        timeout: this.options.submitTimeoutMs ?? DEFAULT_SUBMIT_TIMEOUT_MS,
      });
      reply = JSON.parse(decoder.decode(msg.data));
    } catch (error) {
      return {
        ok: false,
        error: {
          code: ErrorCode.SERVICE_UNAVAILABLE,
          message: `the sub-task of ${tool.name} could not be submitted (${errorText(error)}); try again later or answer without it`,
        },
      };
    }
    if (SubmitTaskReply.safeParse(reply).success) return { ok: true };
    const refused = ErrorBody.safeParse(reply);
    if (refused.success) {
      return {
        ok: false,
        error: {
          code: refused.data.code,
          message: `the sub-task of ${tool.name} was refused: ${refused.data.message}`,
        },
      };
    }
    return {
      ok: false,
      error: {
        code: ErrorCode.INTERNAL,
        message: `the gateway answered the sub-task of ${tool.name} unreadably`,
      },
    };
  }

  /** The call's outcome and the `subtask_finished` data, from the sub-task's terminal event (or its record). */
  async #outcome(
    accountId: string,
    traceId: string,
    final: TaskStatusRecord,
  ): Promise<{
    tool: ToolOutcome;
    finished: Omit<EventData<'subtask_finished'>, 'call_id' | 'tool' | 'subtask_trace_id'>;
  }> {
    const terminal = await readLastTaskEvent(this.options.jsm, { accountId, traceId }).catch(() => undefined);
    if (terminal?.type === 'done') {
      const { message, usage, cost_usd } = terminal.data;
      return {
        tool: toolSuccess(message),
        finished: { status: 'done', usage, ...(cost_usd === undefined ? {} : { cost_usd }) },
      };
    }
    // The terminal error event, or what the record says when the events are gone (or never were).
    const error =
      terminal?.type === 'error'
        ? { code: terminal.data.code, message: terminal.data.message }
        : (final.error ?? { code: ErrorCode.INTERNAL, message: `the sub-task ended ${final.status}` });
    const status = error.code === ErrorCode.CANCELLED ? 'cancelled' : 'error';
    return {
      tool: toolFailure(error.code, `the sub-task ended with ${error.code}: ${error.message}`, {
        subtask_trace_id: traceId,
      }),
      finished: { status, error: { code: error.code, message: error.message } },
    };
  }

  /**
   * Cancels the sub-tasks that calls of an ended task started (those still running: a finished one is
   * left as it is). For a task that ended without its attempt running those calls again: cancelled
   * before a redelivery started, out of attempts. Never throws: the task has ended either way.
   */
  async cancelSubtasks(meta: TaskMeta, callIds: Iterable<string>, why: string): Promise<void> {
    await Promise.all(
      [...callIds].map((callId) =>
        this.#cancel(meta, subtaskTraceId(meta.trace_id, callId), `its parent task ended (${why})`).catch(
          () => undefined,
        ),
      ),
    );
  }

  /** Cancels the sub-task at `traceId`, if the task there is this task's sub-task (never another's). */
  async #cancel(meta: TaskMeta, traceId: string, reason: string): Promise<void> {
    const record = await this.options.statuses.get(meta.account_id, traceId);
    if (record?.parent_trace_id !== meta.trace_id) return;
    const requestedAt = this.options.now?.() ?? new Date();
    await requestTaskCancel(this.options.nc, this.options.statuses, {
      accountId: meta.account_id,
      traceId,
      reason,
      headers: injectTraceContext(),
      requestedAt,
    });
    // A sub-task waiting for approval is held by no executor: no broadcast reaches it.
    await this.options.parked?.store.cancelWait(this.options.parked.js, meta.account_id, traceId, {
      now: requestedAt,
      headers: injectTraceContext(),
    });
  }
}

/** Whether an abort reason ends the task (cancel, deadline), rather than only handing this attempt on. */
function endsTask(reason: unknown): boolean {
  return !(reason instanceof TaskAbortReason) || reason.endsTask;
}

/** Another task of the account sits at the sub-task's id: its answer must not pass for the sub-agent's. */
function foreign(tool: AgentTool, traceId: string): ToolOutcome {
  return toolFailure(
    ErrorCode.CONFLICT,
    `the sub-task of ${tool.name} could not run: another task of the account has its id; answer without it`,
    { subtask_trace_id: traceId },
  );
}

function stopped(signal: AbortSignal): ToolOutcome {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'the task was stopped';
  return toolFailure(ErrorCode.CANCELLED, `the sub-task call was stopped: ${reason}`);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
