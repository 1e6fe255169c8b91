/**
 * The OpenAI Responses API door: `POST /v1/responses` (streamed as the API's semantic events, answered
 * whole, or `background` at once), `GET /v1/responses/{id}` (the response as its task's log makes it;
 * `?stream=true&starting_after=N` resumes a dropped stream from that log), and `POST
 * /v1/responses/{id}/cancel`. A response is a mesh task: its id is `resp_<trace_id>`, so the task API,
 * its SSE and the console find it too.
 *
 * Every response runs in a thread so the next one can continue it: `previous_response_id` continues the
 * thread of that response's task (its status record's `thread_id`), `conversation` names a thread, and
 * otherwise a new thread is created through the thread API. Submission goes through the same
 * TaskSubmitter as `POST /v1/tasks` (auth, rate limits, budgets, running-task caps, unknown agent, version
 * pins); events come from the same follower as the task's SSE. A stream holds an event-stream slot. A
 * client that leaves a response it did not ask to run in the background cancels its task (as chat
 * completions do); a background response runs on, and its stream can be resumed. Every error, Fastify's
 * own included, is answered in OpenAI's shape with the mesh's code.
 */
import {
  followTaskEvents,
  storedTaskEventCount,
  type AgentStore,
  type TaskStatusStore,
} from '@agentmesh/bus';
import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Caller } from '../auth.js';
import { Conflict, InternalFailure, InvalidRequest, NotFound, Rejection, ShuttingDown } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { openAiCallerOf, resolveAgentModel, sendOpenAiRefusal } from '../openai/openai-caller.js';
import { frameworkRefusal, OpenAiRefusal, refusalOf, unsupportedField } from '../openai/openai-errors.js';
import { writeSseStream } from '../sse-stream.js';
import type { TaskCanceller } from '../task-cancellation.js';
import { followTaskEventObjects } from '../task-event-objects.js';
import { ownedTaskStatus, settledTaskStatus } from '../task-lookup.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { ThreadApi } from '../thread-api.js';
import type { AuthenticateRequest } from '../routes/request-caller.js';
import { ResponseFold, type ResponseIdentity, type ResponseStreamEvent } from './response-fold.js';
import { parseResponseRequest, traceIdOfResponse, type ResponseTask } from './response-request.js';

export interface ResponsesRouteDeps {
  authenticate: AuthenticateRequest;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  agents: AgentStore;
  statuses: TaskStatusStore;
  /** Creates the thread of a response that continues none. */
  threads: ThreadApi;
  js: JetStreamClient;
  jsm: JetStreamManager;
  liveEvents: LiveEventFeed | undefined;
  slots: EventStreamSlots;
  heartbeatMs: number;
  /** Aborted when the gateway stops: open streams end (their tasks go on). */
  shutdown: AbortSignal;
  log: Logger;
  now?: () => Date;
}

/** Names the task behind every answer, so it can be looked up through the task API. */
const TRACE_HEADER = 'x-agentmesh-trace-id';
const CLIENT_GONE_REASON = 'the Responses API client went away';
const CANCEL_REASON = 'cancelled through the Responses API';

const eventFrame = (event: { type: string }): string =>
  `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;

interface Target {
  caller: Caller;
  accountId: string;
}

export function registerResponsesRoutes(app: FastifyInstance, deps: ResponsesRouteDeps): void {
  // Its own scope, for an error handler that answers Fastify's failures in OpenAI's shape too.
  void app.register(async (door) => {
    door.setErrorHandler((error, request, reply) => {
      const refusal = frameworkRefusal(error);
      if (refusal) return sendOpenAiRefusal(reply, refusal);
      deps.log.error(
        { err: error, method: request.method, route: request.routeOptions.url },
        'request failed',
      );
      return sendOpenAiRefusal(reply, refusalOf(new InternalFailure({ cause: error })));
    });

    door.post('/v1/responses', async (request, reply) => {
      const target = await openAiCallerOf(deps.authenticate, request);
      if (target instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, target);
      const task = parseResponseRequest(request.body);
      if (task instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, task);
      const agent = await resolveAgentModel(deps.agents, target.accountId, task.model);
      if (agent instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, agent);
      // A stream, or a client waiting for the whole answer, follows the task: it takes a slot first, so
      // one refused for want of a slot leaves no task behind.
      const follows = task.stream || !task.background;
      const slot = follows ? deps.slots.take(eventStreamCaller(target.caller, target.accountId)) : undefined;
      if (slot instanceof Rejection) return sendOpenAiRefusal(reply, refusalOf(slot));
      try {
        return await createResponse(deps, request, reply, target, task);
      } finally {
        slot?.release();
      }
    });

    door.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>(
      '/v1/responses/:id',
      async (request, reply) => {
        const found = await ownedResponse(deps, request);
        if (found instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, found);
        const query = request.query;
        if (query.stream === 'true') {
          const startingAfter = parseStartingAfter(query.starting_after);
          if (startingAfter instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, startingAfter);
          const slot = deps.slots.take(eventStreamCaller(found.caller, found.accountId));
          if (slot instanceof Rejection) return sendOpenAiRefusal(reply, refusalOf(slot));
          try {
            const fold = new ResponseFold(identityOfRecord(found.record));
            await new ResponseStream(deps, reply, found.accountId, found.record.trace_id, fold, false).stream(
              startingAfter,
            );
            return undefined;
          } finally {
            slot.release();
          }
        }
        return answerFromLog(deps, reply, found.accountId, found.record);
      },
    );

    door.post<{ Params: { id: string } }>('/v1/responses/:id/cancel', async (request, reply) => {
      const found = await ownedResponse(deps, request);
      if (found instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, found);
      const traceId = found.record.trace_id;
      const cancelled = await deps.canceller.cancel(traceId, found.accountId, CANCEL_REASON);
      // An ended task is answered as it ended (cancelling twice is harmless), from what its log holds:
      // one refused before it ran has no terminal event to wait for.
      if (cancelled instanceof Conflict) {
        const ended = await settledTaskStatus(deps.statuses, deps.jsm, traceId, found.accountId);
        return ended instanceof Rejection
          ? sendOpenAiRefusal(reply, refusalOf(ended))
          : answerFromLog(deps, reply, found.accountId, ended);
      }
      if (cancelled instanceof Rejection) return sendOpenAiRefusal(reply, refusalOf(cancelled));
      // The answer says what the cancel did: the task's log is followed to its end (an executor aborts a
      // running task at once; a queued or parked one is ended by whoever takes it up next).
      const fold = new ResponseFold(identityOfRecord(found.record));
      const gone = new AbortController();
      reply.raw.once('close', () => {
        if (!reply.raw.writableFinished) gone.abort();
      });
      try {
        for await (const event of followEvents(deps, found.accountId, traceId, gone.signal)) fold.add(event);
      } catch (error) {
        deps.log.error({ err: error, trace_id: traceId }, 'responses cancel: events failed');
        return sendOpenAiRefusal(reply, refusalOf(new InternalFailure({ cause: error })));
      }
      if (gone.signal.aborted) return reply.hijack();
      if (!fold.ended) return sendOpenAiRefusal(reply, refusalOf(new ShuttingDown()));
      return reply.header(TRACE_HEADER, traceId).send(fold.response());
    });
  });
}

/** The thread the response runs in: the previous response's, the conversation, or a new one. */
async function threadOf(
  deps: ResponsesRouteDeps,
  accountId: string,
  task: ResponseTask,
): Promise<{ threadId: string; created: boolean } | OpenAiRefusal> {
  const choice = task.thread;
  if (choice.kind === 'conversation') return { threadId: choice.threadId, created: false };
  if (choice.kind === 'previous_response') {
    const record = await ownedTaskStatus(deps.statuses, choice.traceId, accountId);
    if (record instanceof NotFound) {
      return new OpenAiRefusal(
        new NotFound(`Previous response with id '${choice.responseId}' not found.`),
        'previous_response_id',
      );
    }
    if (record instanceof Rejection) return refusalOf(record);
    if (record.thread_id === undefined) {
      return unsupportedField(
        'previous_response_id',
        `${choice.responseId} ran in no thread, so it cannot be continued; pass the earlier turns as input`,
      );
    }
    return { threadId: record.thread_id, created: false };
  }
  const created = await deps.threads.create(accountId, {});
  if (created instanceof Rejection) return refusalOf(created);
  return { threadId: created.thread_id, created: true };
}

async function createResponse(
  deps: ResponsesRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  target: Target,
  task: ResponseTask,
): Promise<FastifyReply | undefined> {
  const thread = await threadOf(deps, target.accountId, task);
  if (thread instanceof OpenAiRefusal) return sendOpenAiRefusal(reply, thread);
  const submitted = await deps.submitter.submit(
    { ...task.submission, thread_id: thread.threadId },
    target.caller,
  );
  if (submitted instanceof Rejection) {
    // A thread made for this response alone would stay empty.
    if (thread.created) await deps.threads.delete(target.accountId, thread.threadId).catch(() => undefined);
    const param =
      submitted instanceof NotFound && task.thread.kind === 'conversation' ? 'conversation' : null;
    return sendOpenAiRefusal(reply, new OpenAiRefusal(submitted, param));
  }
  const traceId = submitted.reply.trace_id;
  const fold = new ResponseFold({
    traceId,
    createdAt: Math.floor((deps.now ?? (() => new Date()))().getTime() / 1000),
    model: task.model,
    background: task.background,
    instructions: task.instructions,
    metadata: task.metadata,
    textFormat: task.textFormat,
    previousResponseId: task.thread.kind === 'previous_response' ? task.thread.responseId : null,
    threadId: thread.threadId,
  });
  deps.log.info(
    { trace_id: traceId, stream: task.stream, background: task.background, path: request.routeOptions.url },
    'response accepted',
  );
  if (task.stream) {
    await new ResponseStream(deps, reply, target.accountId, traceId, fold, !task.background).stream(-1);
    return undefined;
  }
  if (task.background) return reply.header(TRACE_HEADER, traceId).send(fold.response());
  return new WaitingResponse(deps, reply, target.accountId, traceId, fold).answer();
}

async function ownedResponse(
  deps: ResponsesRouteDeps,
  request: FastifyRequest<{ Params: { id: string } }>,
): Promise<(Target & { record: TaskStatusRecord }) | OpenAiRefusal> {
  const target = await openAiCallerOf(deps.authenticate, request);
  if (target instanceof OpenAiRefusal) return target;
  const traceId = traceIdOfResponse(request.params.id);
  if (traceId === undefined) {
    return new OpenAiRefusal(
      new InvalidRequest('a response id is resp_ followed by a trace id (32 hex or a UUID)'),
      'response_id',
    );
  }
  const record = await settledTaskStatus(deps.statuses, deps.jsm, traceId, target.accountId);
  if (record instanceof NotFound) {
    return new OpenAiRefusal(
      new NotFound(`Response with id '${request.params.id}' not found.`),
      'response_id',
    );
  }
  if (record instanceof Rejection) return refusalOf(record);
  return { ...target, record };
}

function parseStartingAfter(value: unknown): number | OpenAiRefusal {
  if (value === undefined || value === '') return -1;
  const text = String(value);
  if (!/^(0|[1-9][0-9]{0,8})$/.test(text)) {
    return unsupportedField(
      'starting_after',
      'starting_after must be a sequence number (a whole number, 0 or more)',
    );
  }
  return Number(text);
}

/** What a retrieve knows of a response: its task's record (the request's own fields are not kept). */
function identityOfRecord(record: TaskStatusRecord): ResponseIdentity {
  const submitted = Date.parse(record.submitted_at ?? record.updated_at);
  return {
    traceId: record.trace_id,
    createdAt: Math.floor(submitted / 1000),
    model: record.workflow_id,
    background: null,
    instructions: null,
    metadata: null,
    textFormat: { type: 'text' },
    previousResponseId: null,
    threadId: record.thread_id,
  };
}

/** A retrieve: the task's stored events folded, the record deciding an end the log has not written. */
async function answerFromLog(
  deps: ResponsesRouteDeps,
  reply: FastifyReply,
  accountId: string,
  record: TaskStatusRecord,
): Promise<FastifyReply> {
  const fold = new ResponseFold(identityOfRecord(record));
  let events: TaskEvent[];
  try {
    events = await storedTaskEvents(deps, accountId, record.trace_id);
  } catch (error) {
    deps.log.error({ err: error, trace_id: record.trace_id }, 'responses retrieve: events failed');
    return sendOpenAiRefusal(reply, refusalOf(new InternalFailure({ cause: error })));
  }
  for (const event of events) fold.add(event);
  return reply.header(TRACE_HEADER, record.trace_id).send(fold.settledBy(record));
}

/**
 * The task's events stored now: as many as stream info counts on its subject, read through a consumer of
 * their own (what the gateway's NATS user may do; a message get is not granted to it).
 */
async function storedTaskEvents(
  deps: ResponsesRouteDeps,
  accountId: string,
  traceId: string,
): Promise<TaskEvent[]> {
  const count = await storedTaskEventCount(deps.jsm, accountId, traceId);
  const events: TaskEvent[] = [];
  if (count === 0) return events;
  const stop = new AbortController();
  try {
    for await (const event of followTaskEvents(deps.js, { accountId, traceId, signal: stop.signal })) {
      events.push(event);
      if (events.length >= count) break;
    }
  } finally {
    stop.abort();
  }
  return events;
}

function followEvents(
  deps: ResponsesRouteDeps,
  accountId: string,
  traceId: string,
  signal: AbortSignal,
): AsyncGenerator<TaskEvent> {
  return followTaskEventObjects({
    js: deps.js,
    feed: deps.liveEvents,
    accountId,
    traceId,
    afterSeq: 0,
    signal: AbortSignal.any([signal, deps.shutdown]),
    statuses: deps.statuses,
  });
}

/** Cancels a task whose client went away before it ended; a failure to is logged, not thrown. */
async function cancelAbandoned(deps: ResponsesRouteDeps, accountId: string, traceId: string): Promise<void> {
  const outcome = await deps.canceller
    .cancel(traceId, accountId, CLIENT_GONE_REASON)
    .catch((error: unknown) => error);
  deps.log.info(
    { trace_id: traceId, cancelled: !(outcome instanceof Rejection || outcome instanceof Error) },
    'responses client went away before its task ended',
  );
}

/** A response streamed from its task's log: from the start, or after `starting_after` (a resume). */
class ResponseStream {
  private readonly clientGone = new AbortController();

  constructor(
    private readonly deps: ResponsesRouteDeps,
    private readonly reply: FastifyReply,
    private readonly accountId: string,
    private readonly traceId: string,
    private readonly fold: ResponseFold,
    /** The client asked for the answer in this stream, not in the background: leaving cancels. */
    private readonly cancelOnLeave: boolean,
  ) {
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) this.clientGone.abort();
    });
    if (reply.raw.socket === null || reply.raw.socket.destroyed) this.clientGone.abort();
  }

  async stream(startingAfter: number): Promise<void> {
    const { reply } = this;
    reply.hijack();
    reply.raw.setHeader(TRACE_HEADER, this.traceId);
    try {
      await writeSseStream(reply.raw, this.frames(startingAfter), {
        heartbeatMs: this.deps.heartbeatMs,
        signal: this.clientGone.signal,
      });
    } catch (error) {
      if (!this.clientGone.signal.aborted) {
        this.deps.log.error({ err: error, trace_id: this.traceId }, 'responses stream failed');
      }
    }
    if (!this.fold.ended && this.clientGone.signal.aborted && this.cancelOnLeave) {
      await cancelAbandoned(this.deps, this.accountId, this.traceId);
    }
    if (this.deps.shutdown.aborted) reply.raw.socket?.destroySoon();
  }

  private async *frames(startingAfter: number): AsyncGenerator<string> {
    const after = (events: ResponseStreamEvent[]): string[] =>
      events.filter((event) => event.sequence_number > startingAfter).map(eventFrame);
    yield* after(this.fold.open());
    try {
      for await (const event of followEvents(
        this.deps,
        this.accountId,
        this.traceId,
        this.clientGone.signal,
      )) {
        yield* after(this.fold.add(event));
        if (this.fold.ended) return;
      }
    } catch (error) {
      this.deps.log.error({ err: error, trace_id: this.traceId }, 'responses events failed');
      yield eventFrame(errorEvent(this.fold.nextSequence, refusalOf(new InternalFailure({ cause: error }))));
      return;
    }
    if (!this.clientGone.signal.aborted)
      yield eventFrame(errorEvent(this.fold.nextSequence, refusalOf(new ShuttingDown())));
  }
}

/** The API's `error` stream event: the stream itself failed (the task may go on). */
function errorEvent(sequence: number, refusal: OpenAiRefusal): ResponseStreamEvent {
  const { error } = refusal.toBody();
  return {
    type: 'error',
    sequence_number: sequence,
    code: error.code,
    message: error.message,
    param: error.param,
  };
}

/** A response answered whole: follows its task to the end, or cancels it if the client leaves. */
class WaitingResponse {
  private readonly clientGone = new AbortController();

  constructor(
    private readonly deps: ResponsesRouteDeps,
    private readonly reply: FastifyReply,
    private readonly accountId: string,
    private readonly traceId: string,
    private readonly fold: ResponseFold,
  ) {
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) this.clientGone.abort();
    });
    if (reply.raw.socket === null || reply.raw.socket.destroyed) this.clientGone.abort();
  }

  async answer(): Promise<FastifyReply | undefined> {
    try {
      for await (const event of followEvents(
        this.deps,
        this.accountId,
        this.traceId,
        this.clientGone.signal,
      )) {
        this.fold.add(event);
        if (this.fold.ended) break;
      }
    } catch (error) {
      if (!this.clientGone.signal.aborted) {
        this.deps.log.error({ err: error, trace_id: this.traceId }, 'responses events failed');
        return sendOpenAiRefusal(
          this.reply.header(TRACE_HEADER, this.traceId),
          refusalOf(new InternalFailure({ cause: error })),
        );
      }
    }
    if (this.fold.ended) return this.reply.header(TRACE_HEADER, this.traceId).send(this.fold.response());
    if (this.clientGone.signal.aborted) {
      await cancelAbandoned(this.deps, this.accountId, this.traceId);
      this.reply.hijack();
      return undefined;
    }
    // The gateway stops: the task goes on, and can be retrieved.
    return sendOpenAiRefusal(this.reply.header(TRACE_HEADER, this.traceId), refusalOf(new ShuttingDown()));
  }
}
