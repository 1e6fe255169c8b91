/**
 * The AG-UI door: a task's events as an AG-UI event stream (SSE, `data:` = one AG-UI event as JSON),
 * mapped by {@link AgUiEventMapper}.
 *
 * - `POST /v1/ag-ui/agents/:workflow_id` takes a `RunAgentInput` (ag-ui-input.ts), submits the task through
 *   the same path as `POST /v1/tasks` (auth, rate limits, budgets, running-task caps, unknown agent 404,
 *   `workflow@N` pins) and streams it. `threadId` is a mesh thread: an existing one of the account runs the
 *   task with its history (only the messages after the input's last assistant message are sent); an unknown
 *   one is created through the thread API and gets every message. The answer's `x-agentmesh-trace-id`
 *   header names the task.
 * - `GET /v1/ag-ui/tasks/:trace_id/events` streams a task of the caller's account (replayed from its log,
 *   then live); `GET /v1/ag-ui/threads/:thread_id/events` streams a thread's active run (else its last).
 *
 * Interrupts: by default the stream stays open through an approval (decide it with the task API; the next
 * run follows on the same stream). With `forwardedProps.agentmesh.stop_at_interrupt` it ends at the
 * interrupt, AG-UI's own flow: a later input with `resume` decides the approvals and streams the task on
 * from the run after it.
 *
 * Resuming: every frame's SSE `id:` is `<seq>.<n>` (the mesh event it came from and its place among that
 * event's AG-UI events). A client that lost the connection sends it back as `Last-Event-ID` (or
 * `?last_event_id=`) on the task's GET; the stream is rebuilt from the task's log and starts right after
 * that frame, so nothing is lost or repeated. `?run_id=` gives the first run the id the client POSTed.
 * Unlike the chat completions door, a client that goes away does not cancel the task.
 */
import type { TaskStatusStore, ThreadStore } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ThreadId } from '@agentmesh/protocol';
import { requireAccount, type Caller } from '../auth.js';
import { InvalidRequest, NotFound, Rejection, sendRejection, ServiceUnavailable } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { writeSseStream } from '../sse-stream.js';
import { followTaskEventObjects } from '../task-event-objects.js';
import { ownedTaskStatus, taskRequestTarget } from '../task-lookup.js';
import type { ApprovalDesk } from '../task-approvals.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { ThreadApi } from '../thread-api.js';
import type { AuthenticateRequest } from '../routes/request-caller.js';
import { AgUiEventMapper, interruptId, type AgUiRunIdentity } from './ag-ui-events.js';
import { newTurnOf, parseAgUiRunInput, type AgUiResume } from './ag-ui-input.js';

export interface AgUiRouteDeps {
  authenticate: AuthenticateRequest;
  submitter: TaskSubmitter;
  /** Decides the approvals a `resume` answers. */
  approvals: ApprovalDesk;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  liveEvents: LiveEventFeed | undefined;
  slots: EventStreamSlots;
  heartbeatMs: number;
  /** Threads; undefined: a run's threadId is only echoed. */
  threads?: { store: ThreadStore; api: ThreadApi };
  /** Aborted when the gateway stops: open streams end (their tasks go on). */
  shutdown: AbortSignal;
  log: Logger;
}

const TRACE_HEADER = 'x-agentmesh-trace-id';

interface StreamTarget {
  caller: Caller;
  accountId: string;
  identity: AgUiRunIdentity;
  /** The frame the client has (`<seq>.<n>`): the stream starts after it. */
  after: FramePosition;
  /** End the stream at an interrupt. */
  stopAtInterrupt?: boolean;
  /** Interrupt ids a resume answered: the stream starts after the run they ended. */
  resumed?: ReadonlySet<string>;
}

interface FramePosition {
  seq: number;
  index: number;
}

export function registerAgUiRoutes(app: FastifyInstance, deps: AgUiRouteDeps): void {
  app.post<{ Params: { workflow_id: string } }>('/v1/ag-ui/agents/:workflow_id', async (request, reply) => {
    const caller = await deps.authenticate(request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const account = requireAccount(caller);
    if (account instanceof Rejection) return sendRejection(reply, account);
    const { accountId } = account;
    const run = parseAgUiRunInput(request.params.workflow_id, request.body);
    if (run instanceof Rejection) return sendRejection(reply, run);
    if (run.resume !== undefined) {
      const { traceId, decisions } = run.resume;
      const resumed = await resumeTask(deps, accountId, run.resume);
      if (resumed instanceof Rejection) return sendRejection(reply, resumed);
      const slot = deps.slots.take(eventStreamCaller(caller, accountId));
      if (slot instanceof Rejection) return sendRejection(reply, slot);
      try {
        reply.raw.setHeader(TRACE_HEADER, traceId);
        await stream(deps, request, reply, {
          caller,
          accountId,
          identity: { traceId, threadId: run.threadId, runId: run.runId },
          after: { seq: 0, index: -1 },
          stopAtInterrupt: run.stopAtInterrupt,
          resumed: new Set(decisions.map(({ callId }) => interruptId(traceId, callId))),
        });
      } finally {
        slot.release();
      }
      return undefined;
    }
    const thread = await meshThread(deps, accountId, run.threadId);
    if (thread instanceof Rejection) return sendRejection(reply, thread);
    const messages = thread === 'existing' ? newTurnOf(run.messages) : run.messages;
    if (messages.length === 0) {
      return sendRejection(reply, new InvalidRequest('no user message after the last assistant message'));
    }
    // Taken before submitting: a run refused for want of a slot leaves no task behind.
    const slot = deps.slots.take(eventStreamCaller(caller, accountId));
    if (slot instanceof Rejection) return sendRejection(reply, slot);
    try {
      const submission = {
        ...run.submission,
        messages,
        ...(thread === 'none' ? {} : { thread_id: run.threadId }),
      };
      const accepted = await deps.submitter.submit(submission, caller);
      if (accepted instanceof Rejection) return sendRejection(reply, accepted);
      const traceId = accepted.reply.trace_id;
      reply.raw.setHeader(TRACE_HEADER, traceId);
      await stream(deps, request, reply, {
        caller,
        accountId,
        identity: { traceId, threadId: run.threadId, runId: run.runId },
        after: { seq: 0, index: -1 },
        stopAtInterrupt: run.stopAtInterrupt,
      });
    } finally {
      slot.release();
    }
    return undefined;
  });

  app.get<{ Params: { trace_id: string }; Querystring: Record<string, unknown> }>(
    '/v1/ag-ui/tasks/:trace_id/events',
    async (request, reply) => {
      const target = await taskRequestTarget(deps.authenticate, request);
      if (target instanceof Rejection) return sendRejection(reply, target);
      const resumed = await streamTarget(deps, request, target.caller, target.accountId, target.traceId);
      if (resumed instanceof Rejection) return sendRejection(reply, resumed);
      return followStream(deps, request, reply, resumed);
    },
  );

  app.get<{ Params: { thread_id: string }; Querystring: Record<string, unknown> }>(
    '/v1/ag-ui/threads/:thread_id/events',
    async (request, reply) => {
      const caller = await deps.authenticate(request);
      if (caller instanceof Rejection) return sendRejection(reply, caller);
      const account = requireAccount(caller);
      if (account instanceof Rejection) return sendRejection(reply, account);
      const threadId = ThreadId.safeParse(request.params.thread_id);
      if (!threadId.success) return sendRejection(reply, InvalidRequest.fromZod(threadId.error, 'thread_id'));
      if (deps.threads === undefined) {
        return sendRejection(reply, new ServiceUnavailable('threads are not available on this gateway'));
      }
      const store = deps.threads.store;
      const found = await store.get(account.accountId, threadId.data).catch((error: unknown) => error);
      if (found instanceof Error) {
        return sendRejection(
          reply,
          new ServiceUnavailable('threads cannot be read right now; retry', { cause: found }),
        );
      }
      const record = (found as Awaited<ReturnType<ThreadStore['get']>>)?.record;
      if (record === undefined)
        return sendRejection(reply, new NotFound(`no thread ${threadId.data} in this account`));
      const traceId = record.active?.trace_id ?? record.runs.at(-1);
      if (traceId === undefined)
        return sendRejection(reply, new NotFound(`thread ${threadId.data} has no run yet`));
      const target = await streamTarget(deps, request, caller, account.accountId, traceId);
      if (target instanceof Rejection) return sendRejection(reply, target);
      reply.raw.setHeader(TRACE_HEADER, traceId);
      return followStream(deps, request, reply, target);
    },
  );
}

/** A GET's stream: the task must be the caller's; `Last-Event-ID` and `run_id` are read. */
async function streamTarget(
  deps: AgUiRouteDeps,
  request: FastifyRequest<{ Querystring: Record<string, unknown> }>,
  caller: Caller,
  accountId: string,
  traceId: string,
): Promise<StreamTarget | Rejection> {
  const after = lastFrame(request);
  if (after instanceof Rejection) return after;
  const runId = request.query['run_id'];
  if (runId !== undefined && (typeof runId !== 'string' || runId === '' || runId.length > 200)) {
    return new InvalidRequest('run_id must be given once, 1-200 characters');
  }
  const record = await ownedTaskStatus(deps.statuses, traceId, accountId);
  if (record instanceof Rejection) return record;
  return {
    caller,
    accountId,
    identity: {
      traceId,
      threadId: record.thread_id ?? traceId,
      runId: (runId as string | undefined) ?? traceId,
    },
    after,
  };
}

async function followStream(
  deps: AgUiRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  target: StreamTarget,
): Promise<undefined | FastifyReply> {
  const slot = deps.slots.take(eventStreamCaller(target.caller, target.accountId));
  if (slot instanceof Rejection) return sendRejection(reply, slot);
  try {
    await stream(deps, request, reply, target);
  } finally {
    slot.release();
  }
  return undefined;
}

/** Writes the task's AG-UI events, from after `target.after`, until the task's terminal event. */
async function stream(
  deps: AgUiRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  target: StreamTarget,
): Promise<void> {
  const { traceId } = target.identity;
  reply.hijack();
  const clientGone = new AbortController();
  reply.raw.once('close', () => clientGone.abort());
  const signal = AbortSignal.any([clientGone.signal, deps.shutdown]);
  try {
    await writeSseStream(reply.raw, frames(deps, target, signal), { heartbeatMs: deps.heartbeatMs, signal });
  } catch (error) {
    if (!signal.aborted) deps.log.error({ err: error, trace_id: traceId }, 'ag-ui stream failed');
  }
  if (deps.shutdown.aborted) reply.raw.socket?.destroySoon();
  deps.log.info(
    { trace_id: traceId, client_gone: clientGone.signal.aborted, route: request.routeOptions.url },
    'ag-ui stream ended',
  );
}

async function* frames(
  deps: AgUiRouteDeps,
  target: StreamTarget,
  signal: AbortSignal,
): AsyncGenerator<string> {
  const mapper = new AgUiEventMapper(target.identity);
  // A resume's stream starts after the run its interrupts ended (the one listing every one of them).
  let skipping = target.resumed !== undefined;
  // Rebuilt from the start: the mapper's state (open messages, runs, steps) is the log's up to the resume point.
  for await (const event of followTaskEventObjects({
    js: deps.js,
    feed: deps.liveEvents,
    accountId: target.accountId,
    traceId: target.identity.traceId,
    afterSeq: 0,
    signal,
    statuses: deps.statuses,
  })) {
    const mapped = mapper.map(event);
    for (const [index, agUiEvent] of mapped.entries()) {
      const interrupts = interruptIdsOf(agUiEvent);
      if (skipping) {
        if (interrupts !== undefined && [...(target.resumed ?? [])].every((id) => interrupts.includes(id)))
          skipping = false;
        continue;
      }
      if (event.seq < target.after.seq || (event.seq === target.after.seq && index <= target.after.index))
        continue;
      yield `id: ${event.seq}.${index}\ndata: ${JSON.stringify(agUiEvent)}\n\n`;
      if (interrupts !== undefined && target.stopAtInterrupt === true) return;
    }
    if (mapper.ended) return;
  }
}

/** The interrupt ids of a RUN_FINISHED with an interrupt outcome; undefined for any other event. */
function interruptIdsOf(event: { type: string }): string[] | undefined {
  const outcome = (event as { outcome?: { type?: string; interrupts?: { id: string }[] } }).outcome;
  return outcome?.type === 'interrupt' ? (outcome.interrupts ?? []).map(({ id }) => id) : undefined;
}

/** Decides each approval a resume answers; the task must be the account's. */
async function resumeTask(
  deps: AgUiRouteDeps,
  accountId: string,
  resume: AgUiResume,
): Promise<Rejection | undefined> {
  const record = await ownedTaskStatus(deps.statuses, resume.traceId, accountId);
  if (record instanceof Rejection) return record;
  for (const { callId, approve, comment } of resume.decisions) {
    const decided = await deps.approvals.decide(resume.traceId, accountId, callId, {
      approve,
      ...(comment === undefined ? {} : { comment }),
    });
    if (decided instanceof Rejection) return decided;
  }
  return undefined;
}

function lastFrame(
  request: FastifyRequest<{ Querystring: Record<string, unknown> }>,
): FramePosition | Rejection {
  const header = request.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? request.query['last_event_id'];
  if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return { seq: 0, index: -1 };
  const match = typeof raw === 'string' ? /^(\d{1,15})\.(\d{1,6})$/.exec(raw.trim()) : null;
  if (match === null) {
    return new InvalidRequest('Last-Event-ID must be the id of an AG-UI frame of this stream (<seq>.<n>)');
  }
  return { seq: Number(match[1]), index: Number(match[2]) };
}

/**
 * The mesh thread of a run's threadId: `existing` (the account has it), `created` (made now through the
 * thread API), or `none` (this gateway serves no threads, or the id cannot name one: the run is thread-less).
 */
async function meshThread(
  deps: AgUiRouteDeps,
  accountId: string,
  threadId: string,
): Promise<'existing' | 'created' | 'none' | Rejection> {
  if (deps.threads === undefined || !ThreadId.safeParse(threadId).success) return 'none';
  const found = await deps.threads.store.get(accountId, threadId).catch((error: unknown) => error);
  if (found instanceof Error)
    return new ServiceUnavailable('threads cannot be read right now; retry', { cause: found });
  if (found !== undefined) return 'existing';
  const created = await deps.threads.api.create(accountId, { thread_id: threadId });
  // Created by a concurrent run with the same id between the read and here: it exists now.
  if (created instanceof Rejection) return created.code === 'CONFLICT' ? 'existing' : created;
  return 'created';
}
