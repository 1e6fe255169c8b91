/**
 * The A2A methods over mesh tasks, as the SDK's `A2ARequestHandler` (so the SDK's JSON-RPC transports,
 * v1.0 and 0.3, parse and answer the wire): one handler per request, for one caller, account and agent.
 *
 * - An A2A task is a mesh task (task id = trace id), submitted through the gateway's TaskSubmitter (auth,
 *   rate limits, budgets, running-task caps, version pins apply unchanged); `contextId` is a mesh thread
 *   (created through the thread API when the message names none, or names one that does not exist yet).
 * - Streams follow the task's event log (replay, then live) through the gateway's event follower and end
 *   when the task ends or asks for input; SubscribeToTask resumes after `Last-Event-ID` (a2a-task-view).
 * - A task's other agent, or another account's task, is not found: ids never cross tenancy.
 * - Push-notification configs are refused (PushNotificationNotSupportedError); see the gateway README.
 */
import { createHash } from 'node:crypto';
import { Role, type AgentCard, type Message, type StreamResponse, type Task } from '@a2a-js/sdk';
import {
  PushNotificationNotSupportedError,
  RequestMalformedError,
  TaskNotCancelableError,
  TaskNotFoundError,
  UnsupportedOperationError,
} from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import type {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  SendMessageRequest,
  SubscribeToTaskRequest,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { storedTaskEventCount, type TaskStatusStore } from '@agentmesh/bus';
import {
  ErrorCode,
  isFinalTaskStatus,
  isTerminalEvent,
  isThreadId,
  TraceIdInput,
  type TaskEvent,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Caller } from '../auth.js';
import { DoorTaskState, doorStateOfStatus, isEndedDoorState } from '../door-mapping/index.js';
import { Conflict, InvalidRequest, Rejection } from '../errors.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { followTaskEventObjects } from '../task-event-objects.js';
import { settledTaskStatus } from '../task-lookup.js';
import type { TaskCanceller } from '../task-cancellation.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { ThreadApi } from '../thread-api.js';
import { A2aTaskView, isAfter, parseCursor, type StreamCursor } from './a2a-task-view.js';
import { MeshRefusal } from './a2a-errors.js';
import { isPastCursor, listCursorOf, listCursorToken, newestFirst } from './a2a-list-page.js';

/** The task's user when the message names none (credentials the agent needs are read for this user). */
export const DEFAULT_A2A_USER_ID = 'default';
const DEFAULT_LIST_PAGE = 50;
const MAX_LIST_PAGE = 100;
/** How many of the account's newest task records ListTasks looks through. */
const LIST_SCAN_LIMIT = 1000;
/** How long GetTask reads a task's stored events at most. */
const STORED_READ_MS = 10_000;

export interface A2aHandlerDeps {
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  threads: ThreadApi;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  jsm: JetStreamManager;
  liveEvents: LiveEventFeed | undefined;
  /** How long CancelTask waits for the task to end before answering its state as it stands. */
  cancelWaitMs: number;
  log: Logger;
}

export interface A2aCallTarget {
  caller: Caller;
  accountId: string;
  workflowId: string;
  card: AgentCard;
  /** `Last-Event-ID` of the request: where SubscribeToTask resumes. */
  lastEventId: string | undefined;
  /** Ends every stream of this request (the client went away, or the gateway stops). */
  signal: AbortSignal;
}

export class MeshA2aHandler implements A2ARequestHandler {
  constructor(
    private readonly deps: A2aHandlerDeps,
    private readonly target: A2aCallTarget,
  ) {}

  async getAgentCard(): Promise<AgentCard> {
    return this.target.card;
  }

  /** Every card here is already served to an authenticated account only: the extended card is the card. */
  async getAuthenticatedExtendedAgentCard(): Promise<AgentCard> {
    return this.target.card;
  }

  async sendMessage(params: SendMessageRequest, _context: ServerCallContext): Promise<Message | Task> {
    const started = await this.submit(params);
    if (params.configuration?.returnImmediately === true) return started.view.task([started.message]);
    // Blocking: the task as it stands when it ends or asks for input.
    for await (const _update of this.follow(started.view, 0)) {
      // The view folds every event; nothing to forward.
    }
    return started.view.task([started.message]);
  }

  async *sendMessageStream(
    params: SendMessageRequest,
    _context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const started = await this.submit(params);
    yield { payload: { $case: 'task', value: started.view.task([started.message]) } };
    for await (const update of this.follow(started.view, 0)) yield update;
  }

  async getTask(params: GetTaskRequest, _context: ServerCallContext): Promise<Task> {
    return (await this.storedView(params.id)).task();
  }

  /**
   * The agent's tasks, newest first, a page at a time (a2a-list-page.ts), among the account's
   * LIST_SCAN_LIMIT most recently written task records. `totalSize` counts this page's tasks: counting
   * every match would read every record in the window.
   */
  async listTasks(params: ListTasksRequest, _context: ServerCallContext): Promise<ListTasksResponse> {
    const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_LIST_PAGE, 1), MAX_LIST_PAGE);
    const wanted = params.status;
    const cursor = params.pageToken === '' ? undefined : listCursorOf(params.pageToken);
    if (params.pageToken !== '' && cursor === undefined) {
      throw new MeshRefusal(new InvalidRequest('pageToken is not a token a ListTasks answer gave'));
    }
    const since = params.statusTimestampAfter ? Date.parse(params.statusTimestampAfter) : undefined;
    if (since !== undefined && Number.isNaN(since)) {
      throw new MeshRefusal(new InvalidRequest('statusTimestampAfter must be an ISO 8601 timestamp'));
    }
    let records: TaskStatusRecord[];
    try {
      // One more than a page: whether another page follows.
      records = await this.deps.statuses.listMatching(
        this.target.accountId,
        pageSize + 1,
        (record) =>
          agentOf(record) === this.target.workflowId &&
          (params.contextId === '' || record.thread_id === params.contextId) &&
          (wanted <= 0 || viewOfRecord(record).task().status?.state === wanted) &&
          (since === undefined || Date.parse(record.updated_at) >= since) &&
          (cursor === undefined || isPastCursor(record, cursor)),
        LIST_SCAN_LIMIT,
      );
    } catch (error) {
      throw MeshRefusal.unavailable('tasks cannot be listed right now; retry', error);
    }
    const page = records.sort(newestFirst).slice(0, pageSize);
    const last = page.at(-1);
    const tasks = page.map((record) => viewOfRecord(record).task());
    return {
      tasks,
      nextPageToken: records.length > pageSize && last !== undefined ? listCursorToken(last) : '',
      pageSize,
      totalSize: tasks.length,
    };
  }

  async cancelTask(params: CancelTaskRequest, _context: ServerCallContext): Promise<Task> {
    const record = await this.ownedRecord(params.id);
    if (isFinalTaskStatus(record.status)) {
      throw new TaskNotCancelableError(`task ${record.trace_id} has already ended (${record.status})`);
    }
    const cancelled = await this.deps.canceller.cancel(
      record.trace_id,
      this.target.accountId,
      'cancelled over A2A',
    );
    if (cancelled instanceof Conflict) {
      throw new TaskNotCancelableError(`task ${record.trace_id} has already ended (${record.status})`);
    }
    if (cancelled instanceof Rejection) throw new MeshRefusal(cancelled);
    // Answered once the task has ended (canceled, or whatever came first), or after the wait as it stands.
    const view = this.viewFor(record);
    const waited = AbortSignal.any([this.target.signal, AbortSignal.timeout(this.deps.cancelWaitMs)]);
    for await (const _update of this.follow(view, 0, waited, false)) {
      // Folded into the view.
    }
    return (await this.settle(view)).task();
  }

  async *resubscribe(
    params: SubscribeToTaskRequest,
    _context: ServerCallContext,
  ): AsyncGenerator<StreamResponse, void, undefined> {
    const record = await this.ownedRecord(params.id);
    const given = parseCursor(this.target.lastEventId);
    if (this.target.lastEventId !== undefined && given === undefined) {
      throw new RequestMalformedError(
        `Last-Event-ID must be a cursor <seq>:<k> (or <seq>) from metadata.agentmesh.cursor; got ${JSON.stringify(this.target.lastEventId)}`,
      );
    }
    // Without a cursor, the snapshot is the task as stored now: the first `stored` events.
    let stored = 0;
    if (given === undefined) {
      if (isFinalTaskStatus(record.status)) {
        throw new UnsupportedOperationError(
          `task ${record.trace_id} has ended (${record.status}): GetTask returns its result, or resubscribe with Last-Event-ID to replay what came after it`,
        );
      }
      stored = await this.storedEventCount(record.trace_id);
    }
    const view = this.viewFor(record);
    // The events up to the cursor make the snapshot (what the client has seen); the rest stream.
    let boundary: StreamCursor | undefined;
    const snapshot = (at: StreamCursor): StreamResponse => {
      boundary = at;
      const cursor = at.index === Number.MAX_SAFE_INTEGER ? String(at.seq) : `${at.seq}:${at.index}`;
      return { payload: { $case: 'task', value: view.task([], cursor) } };
    };
    if (given === undefined ? stored === 0 : given.seq === 0) {
      yield snapshot(given ?? { seq: 0, index: Number.MAX_SAFE_INTEGER });
    }
    let folded = 0;
    for await (const event of this.events(record.trace_id, 0, this.target.signal)) {
      const updates = view.add(event);
      folded += 1;
      if (boundary === undefined) {
        if (given !== undefined && event.seq >= given.seq) yield snapshot(given);
        else if (given === undefined && folded >= stored) {
          yield snapshot({ seq: event.seq, index: Number.MAX_SAFE_INTEGER });
        }
      }
      if (boundary === undefined) continue;
      for (const update of updates) {
        if (isAfter(boundary, update.cursor.seq, update.cursor.index)) yield update.response;
      }
      if (isTerminalEvent(event) || view.state === DoorTaskState.INPUT_REQUIRED) break;
    }
    if (boundary === undefined && !this.target.signal.aborted) {
      yield snapshot(given ?? { seq: view.lastSeq, index: Number.MAX_SAFE_INTEGER });
    }
  }

  async createTaskPushNotificationConfig(
    _params: TaskPushNotificationConfig,
  ): Promise<TaskPushNotificationConfig> {
    throw pushNotSupported();
  }

  async getTaskPushNotificationConfig(
    _params: GetTaskPushNotificationConfigRequest,
  ): Promise<TaskPushNotificationConfig> {
    throw pushNotSupported();
  }

  async listTaskPushNotificationConfigs(
    _params: ListTaskPushNotificationConfigsRequest,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    throw pushNotSupported();
  }

  async deleteTaskPushNotificationConfig(_params: DeleteTaskPushNotificationConfigRequest): Promise<void> {
    throw pushNotSupported();
  }

  /** Submits the message as a new task in its context's thread. */
  private async submit(params: SendMessageRequest): Promise<{ view: A2aTaskView; message: Message }> {
    const message = params.message;
    if (message === undefined) throw new RequestMalformedError('params.message is required');
    if (message.taskId !== '') {
      throw new UnsupportedOperationError(
        `a mesh task takes no further messages (task ${message.taskId}): send a new message in its context (contextId) to continue the conversation, or decide a waiting approval with POST /v1/tasks/{task id}/approvals/{call_id}`,
      );
    }
    if (params.configuration?.taskPushNotificationConfig !== undefined) throw pushNotSupported();
    const text = messageText(message);
    const threadId = await this.threadFor(message.contextId, message.messageId);
    const metadata = params.metadata ?? {};
    const submission: Record<string, unknown> = {
      workflow_id: this.target.workflowId,
      user_id: typeof metadata.user_id === 'string' ? metadata.user_id : DEFAULT_A2A_USER_ID,
      messages: [{ role: 'user', content: text }],
      thread_id: threadId,
      ...(message.messageId === '' ? {} : { idempotency_key: `a2a:${message.messageId}` }),
      ...(isObject(metadata.variables) ? { variables: metadata.variables } : {}),
    };
    const accepted = await this.deps.submitter.submit(submission, this.target.caller);
    if (accepted instanceof Rejection) throw new MeshRefusal(accepted);
    const traceId = accepted.reply.trace_id;
    return {
      view: new A2aTaskView(traceId, threadId, DoorTaskState.SUBMITTED, {
        workflow_id: this.target.workflowId,
      }),
      message: { ...message, taskId: traceId, contextId: threadId, role: Role.ROLE_USER },
    };
  }

  /**
   * The thread a context is: the one named (created when it does not exist yet), or a new one. A new
   * one's id derives from the message id, so a client sending the same message again (the same
   * idempotency key, the same task) is answered the same context, not a second empty thread.
   */
  private async threadFor(contextId: string, messageId: string): Promise<string> {
    if (contextId !== '' && !isThreadId(contextId)) {
      throw new RequestMalformedError(
        'message.contextId must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-" (it names a mesh thread)',
      );
    }
    const threadId =
      contextId !== ''
        ? contextId
        : messageId !== ''
          ? `ctx_${createHash('sha256').update(messageId).digest('hex').slice(0, 40)}`
          : undefined;
    if (threadId !== undefined) {
      const found = await this.deps.threads.get(this.target.accountId, threadId);
      if (!(found instanceof Rejection)) return threadId;
      if (found.code !== ErrorCode.NOT_FOUND) throw new MeshRefusal(found);
    }
    const created = await this.deps.threads.create(
      this.target.accountId,
      threadId === undefined ? {} : { thread_id: threadId },
    );
    // Created by a request racing this one: the thread is there either way.
    if (created instanceof Conflict && threadId !== undefined) return threadId;
    if (created instanceof Rejection) throw new MeshRefusal(created);
    return created.thread_id;
  }

  /**
   * The view's updates for the task's events after `afterSeq`, until the task ends or (when
   * `stopOnInput`) asks for input.
   */
  private async *follow(
    view: A2aTaskView,
    afterSeq: number,
    signal: AbortSignal = this.target.signal,
    stopOnInput = true,
  ): AsyncGenerator<StreamResponse> {
    for await (const event of this.events(view.taskId, afterSeq, signal)) {
      for (const update of view.add(event)) yield update.response;
      if (isEndedDoorState(view.state) || (stopOnInput && view.state === DoorTaskState.INPUT_REQUIRED))
        return;
    }
  }

  private async *events(traceId: string, afterSeq: number, signal: AbortSignal): AsyncGenerator<TaskEvent> {
    try {
      yield* followTaskEventObjects({
        js: this.deps.js,
        feed: this.deps.liveEvents,
        accountId: this.target.accountId,
        traceId,
        afterSeq,
        signal,
        statuses: this.deps.statuses,
      });
    } catch (error) {
      if (signal.aborted) return;
      throw MeshRefusal.unavailable('task events cannot be read right now; retry', error);
    }
  }

  /** The caller's task of this agent, as its status record says; not found for anything else. */
  private async ownedRecord(id: string): Promise<TaskStatusRecord> {
    const parsed = TraceIdInput.safeParse(id);
    if (!parsed.success)
      throw new TaskNotFoundError(
        `no task ${JSON.stringify(id)}: a task id is a trace id (32 hex or a UUID)`,
      );
    const record = await settledTaskStatus(
      this.deps.statuses,
      this.deps.jsm,
      parsed.data,
      this.target.accountId,
    );
    if (record instanceof Rejection) {
      if (record.code === ErrorCode.NOT_FOUND)
        throw new TaskNotFoundError(`no task ${parsed.data} of agent ${this.target.workflowId}`);
      throw new MeshRefusal(record);
    }
    if (agentOf(record) !== this.target.workflowId) {
      throw new TaskNotFoundError(`no task ${parsed.data} of agent ${this.target.workflowId}`);
    }
    return record;
  }

  /**
   * How many events the task has stored (the stream's count for its subject: the gateway's NATS user
   * may read stream info, not single messages of MESH_EVENTS).
   */
  private async storedEventCount(traceId: string): Promise<number> {
    try {
      return await storedTaskEventCount(this.deps.jsm, this.target.accountId, traceId);
    } catch (error) {
      throw MeshRefusal.unavailable('task events cannot be read right now; retry', error);
    }
  }

  private viewFor(record: TaskStatusRecord): A2aTaskView {
    return new A2aTaskView(record.trace_id, record.thread_id ?? '', DoorTaskState.SUBMITTED, {
      workflow_id: agentOf(record),
    });
  }

  /** The task with every event stored so far folded in. */
  private async storedView(id: string): Promise<A2aTaskView> {
    const record = await this.ownedRecord(id);
    const view = this.viewFor(record);
    const stored = await this.storedEventCount(record.trace_id);
    if (stored > 0) {
      // Bounded: a log the follower cannot finish reading answers what it has read.
      const reading = AbortSignal.any([AbortSignal.timeout(STORED_READ_MS), this.target.signal]);
      let folded = 0;
      for await (const event of this.events(record.trace_id, 0, reading)) {
        view.add(event);
        folded += 1;
        if (folded >= stored || isTerminalEvent(event)) break;
      }
    } else {
      view.settle(doorStateOfStatus(record));
    }
    return this.settleWith(view, record);
  }

  private async settle(view: A2aTaskView): Promise<A2aTaskView> {
    const record = await settledTaskStatus(
      this.deps.statuses,
      this.deps.jsm,
      view.taskId,
      this.target.accountId,
    );
    return record instanceof Rejection ? view : this.settleWith(view, record);
  }

  /** A record that has ended is the truth (a task cancelled before it ran has no events). */
  private settleWith(view: A2aTaskView, record: TaskStatusRecord): A2aTaskView {
    if (isFinalTaskStatus(record.status) && !isEndedDoorState(view.state)) {
      view.settle(doorStateOfStatus(record), record.error && `${record.error.code}: ${record.error.message}`);
    }
    return view;
  }
}

const agentOf = (record: TaskStatusRecord): string => record.workflow_id.split('@')[0] ?? record.workflow_id;

function viewOfRecord(record: TaskStatusRecord): A2aTaskView {
  const view = new A2aTaskView(record.trace_id, record.thread_id ?? '', DoorTaskState.SUBMITTED, {
    workflow_id: agentOf(record),
  });
  view.settle(doorStateOfStatus(record), record.error && `${record.error.code}: ${record.error.message}`);
  view.lastSeq = record.last_seq ?? 0;
  return view;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The message as the task's user text: its text parts, and its data parts as JSON. */
function messageText(message: Message): string {
  const pieces: string[] = [];
  for (const [index, part] of message.parts.entries()) {
    const content = part.content;
    if (content?.$case === 'text') pieces.push(content.value);
    else if (content?.$case === 'data') pieces.push(JSON.stringify(content.value));
    else {
      throw new RequestMalformedError(
        `message.parts[${index}]: only text and data parts are taken (files are not: send their content as text or data)`,
      );
    }
  }
  const text = pieces.join('\n');
  if (text.trim() === '') throw new RequestMalformedError('message.parts must hold some text or data');
  return text;
}

const pushNotSupported = () =>
  new PushNotificationNotSupportedError(
    "push notifications are not served over A2A: register a webhook endpoint (POST /v1/admin/webhooks) and pass a task's own webhook when submitting through POST /v1/tasks",
  );

export { DoorTaskState };
