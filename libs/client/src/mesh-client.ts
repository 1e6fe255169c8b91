/**
 * The mesh as a caller sees it through the gateway's HTTP API: submit a task, follow its events,
 * read its status, cancel it, approve or deny the tool calls it waits on. Every answer is validated against the protocol's schema; failures are
 * the client's typed errors (see errors.ts).
 */
import {
  SubmitTaskReply,
  TaskApprovals,
  TaskStatusRecord,
  ThreadListReply,
  ThreadReply,
  ThreadSummary,
  type CreateThreadRequest,
  type ApprovalDecisionRequest,
  type SubmitTaskRequestInput,
  type TaskEvent,
} from '@agentmesh/protocol';
import { GatewayHttp, type GatewayHttpOptions } from './gateway-http.js';
import { followAccountEvents, type TailOptions } from './account-event-stream.js';
import { followTaskEvents, type FollowEventsOptions, type ReconnectPolicy } from './task-event-stream.js';
import { followThreadEvents, type ThreadEvent, type ThreadEventsOptions } from './thread-event-stream.js';
import { z } from 'zod';

export interface MeshClientOptions extends GatewayHttpOptions {
  /** How every event stream of this client reconnects (per call overridable). */
  reconnect?: Partial<ReconnectPolicy>;
  /** See {@link FollowEventsOptions.idleTimeoutMs}. */
  idleTimeoutMs?: number;
}

export interface CallOptions {
  signal?: AbortSignal;
}

export type EventsOptions = FollowEventsOptions;

/** A submitted task and its events, followed from the first. */
export interface RunningTask extends SubmitTaskReply {
  events: AsyncIterable<TaskEvent>;
}

export class MeshClient {
  private readonly http: GatewayHttp;

  constructor(private readonly options: MeshClientOptions) {
    this.http = new GatewayHttp(options);
  }

  /**
   * Submits a task (`POST /v1/tasks`). With an `idempotency_key`, submitting again answers the first
   * task's trace_id and nothing runs twice, so a submit that failed as unreachable is safe to repeat.
   */
  async submit(request: SubmitTaskRequestInput, options: CallOptions = {}): Promise<SubmitTaskReply> {
    const response = await this.http.send('POST', 'v1/tasks', { body: request, signal: options.signal });
    return this.http.json(response, SubmitTaskReply, 'the reply to POST /v1/tasks');
  }

  /** The task's status record (`GET /v1/tasks/:id`). */
  async status(traceId: string, options: CallOptions = {}): Promise<TaskStatusRecord> {
    const response = await this.http.send('GET', taskPath(traceId), { signal: options.signal });
    return this.http.json(response, TaskStatusRecord, `the status of task ${traceId}`);
  }

  /**
   * Asks for the task to be cancelled (`POST /v1/tasks/:id/cancel`); answers the status record with
   * `cancel_requested_at` set. The task itself ends with an `error {code: CANCELLED}` event.
   */
  async cancel(traceId: string, options: CallOptions & { reason?: string } = {}): Promise<TaskStatusRecord> {
    const response = await this.http.send('POST', `${taskPath(traceId)}/cancel`, {
      body: options.reason === undefined ? {} : { reason: options.reason },
      signal: options.signal,
    });
    return this.http.json(response, TaskStatusRecord, `the reply to cancelling task ${traceId}`);
  }

  /**
   * The approvals of the task's current park (`GET /v1/tasks/:id/approvals`): pending and decided ones,
   * an empty list when the task waits on nobody.
   */
  async approvals(traceId: string, options: CallOptions = {}): Promise<TaskApprovals> {
    const response = await this.http.send('GET', `${taskPath(traceId)}/approvals`, {
      signal: options.signal,
    });
    return this.http.json(response, TaskApprovals, `the approvals of task ${traceId}`);
  }

  /**
   * Decides on a tool call the task waits on (`POST /v1/tasks/:id/approvals/:call_id`). Once every
   * approval is decided the task is queued to go on (`resumed: true`); a denial reaches the model as a
   * tool error carrying the comment. Sending the same decision again answers the current state; a
   * different one on a decided call throws MeshApiError CONFLICT.
   */
  async decideApproval(
    traceId: string,
    callId: string,
    decision: ApprovalDecisionRequest,
    options: CallOptions = {},
  ): Promise<TaskApprovals> {
    const response = await this.http.send(
      'POST',
      `${taskPath(traceId)}/approvals/${encodeURIComponent(callId)}`,
      {
        body: decision.comment === undefined ? { approve: decision.approve } : decision,
        signal: options.signal,
      },
    );
    return this.http.json(
      response,
      TaskApprovals,
      `the reply to deciding on call ${callId} of task ${traceId}`,
    );
  }

  /** Approves a tool call the task waits on; see {@link decideApproval}. */
  approve(
    traceId: string,
    callId: string,
    options: CallOptions & { comment?: string } = {},
  ): Promise<TaskApprovals> {
    return this.decideApproval(traceId, callId, decisionOf(true, options.comment), options);
  }

  /** Denies a tool call the task waits on (the model sees the comment); see {@link decideApproval}. */
  deny(
    traceId: string,
    callId: string,
    options: CallOptions & { comment?: string } = {},
  ): Promise<TaskApprovals> {
    return this.decideApproval(traceId, callId, decisionOf(false, options.comment), options);
  }

  /** The task's events over SSE, from the start or after `lastEventId`, to the terminal event. */
  events(traceId: string, options: EventsOptions = {}): AsyncIterable<TaskEvent> {
    return followTaskEvents(this.http, traceId, {
      ...(this.options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: this.options.idleTimeoutMs }),
      ...options,
      reconnect: { ...this.options.reconnect, ...options.reconnect },
    });
  }

  /**
   * Every event of the caller's account (or, for an admin, of `account`) from now on (`GET /v1/events`),
   * across all its tasks, until the connection ends: then it throws MeshUnreachableError.
   */
  tail(options: TailOptions = {}): AsyncIterable<TaskEvent> {
    return followAccountEvents(this.http, {
      ...(this.options.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: this.options.idleTimeoutMs }),
      ...options,
    });
  }

  /** Creates a thread (`POST /v1/threads`): its id (generated when absent), metadata, strategy, compaction. */
  async createThread(request: CreateThreadRequest = {}, options: CallOptions = {}): Promise<ThreadSummary> {
    const response = await this.http.send('POST', 'v1/threads', { body: request, signal: options.signal });
    return this.http.json(response, ThreadSummary, 'the reply to POST /v1/threads');
  }

  /** The account's threads, newest first (`GET /v1/threads`); pass `next_before` back as `before` for more. */
  async listThreads(
    options: CallOptions & { limit?: number; before?: string } = {},
  ): Promise<ThreadListReply> {
    const query = new URLSearchParams();
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.before !== undefined) query.set('before', options.before);
    const path = query.size > 0 ? `v1/threads?${query}` : 'v1/threads';
    const response = await this.http.send('GET', path, { signal: options.signal });
    return this.http.json(response, ThreadListReply, 'the thread list');
  }

  /** A thread: its record, entries (turns with their tool calls, compactions) and the history a run sees. */
  async thread(threadId: string, options: CallOptions = {}): Promise<ThreadReply> {
    const response = await this.http.send('GET', threadPath(threadId), { signal: options.signal });
    return this.http.json(response, ThreadReply, `thread ${threadId}`);
  }

  /** Deletes a thread and its entries. */
  async deleteThread(threadId: string, options: CallOptions = {}): Promise<void> {
    const response = await this.http.send('DELETE', threadPath(threadId), { signal: options.signal });
    await this.http.json(response, z.object({ deleted: z.literal(true) }), `deleting thread ${threadId}`);
  }

  /** Every event of every run of the thread, from its creation or after `afterId`, live (see ThreadEvent). */
  threadEvents(threadId: string, options: ThreadEventsOptions = {}): AsyncIterable<ThreadEvent> {
    return followThreadEvents(this.http, threadId, options);
  }

  /** Submits a task and follows its events. */
  async run(request: SubmitTaskRequestInput, options: EventsOptions = {}): Promise<RunningTask> {
    const reply = await this.submit(request, { signal: options.signal });
    return { ...reply, events: this.events(reply.trace_id, options) };
  }
}

const decisionOf = (approve: boolean, comment: string | undefined): ApprovalDecisionRequest =>
  comment === undefined ? { approve } : { approve, comment };

const taskPath = (traceId: string): string => `v1/tasks/${encodeURIComponent(traceId)}`;
const threadPath = (threadId: string): string => `v1/threads/${encodeURIComponent(threadId)}`;
