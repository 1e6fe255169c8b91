/**
 * `GET /v1/tasks/:trace_id/events`: the task's events as Server-Sent Events, replayed from the start
 * or resumed after `Last-Event-ID` (header, or `?last_event_id=` for clients that cannot set headers),
 * opened with the caller's API key or with a stream token for this task (`?token=`, for EventSource),
 * then followed live until the terminal event — from the gateway's live feed when it holds what the
 * client needs, from JetStream otherwise ({@link followTaskEventFrames}). A client that disconnects
 * stops its reader; one that resumes after the last event of a finished task gets 204 No Content
 * (SSE's "stop"); a finished task whose events are no longer stored (past MESH_EVENTS' retention) gets
 * 410 EVENTS_EXPIRED with its final status, instead of a stream of heartbeats that would never end.
 * Open streams are capped per caller and per instance ({@link EventStreamSlots}):
 * beyond a cap the answer is 429 RATE_LIMITED with `Retry-After`, before anything is read.
 */
import { expiredTaskEvents, TaskEventsExpiredError, type TaskStatusStore } from '@agentmesh/bus';
import { isFinalTaskStatus, type TaskStatusRecord } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { EventsExpired, InvalidRequest, Rejection, sendRejection, ServiceUnavailable } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { writeSseStream } from '../sse-stream.js';
import { streamTokenTarget, type StreamTokens } from '../stream-tokens.js';
import { followTaskEventFrames } from '../task-event-follower.js';
import { ownedTaskStatus, taskRequestTarget } from '../task-lookup.js';
import { registerAccountEventRoutes } from './account-events-sse.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface TaskEventRouteDeps {
  authenticate: AuthenticateRequest;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** The gateway's live feed; undefined when it runs without one (every stream reads JetStream). */
  liveEvents: LiveEventFeed | undefined;
  heartbeatMs: number;
  slots: EventStreamSlots;
  /** Checks `?token=`; undefined: only API keys open a stream. */
  streamTokens: StreamTokens | undefined;
  /** Aborted when the gateway stops: open streams end so the server can close. */
  shutdown: AbortSignal;
  log: Logger;
}

interface EventsRequest {
  Params: { trace_id: string };
  Querystring: { last_event_id?: string; token?: string | string[] };
}

export function registerTaskEventRoutes(app: FastifyInstance, deps: TaskEventRouteDeps): void {
  registerAccountEventRoutes(app, deps);
  app.get<EventsRequest>('/v1/tasks/:trace_id/events', async (request, reply) => {
    const target = await eventStreamTarget(deps, request);
    if (target instanceof Rejection) return sendRejection(reply, target);
    const { accountId, traceId, streamCaller } = target;
    const afterSeq = lastEventId(request);
    if (afterSeq instanceof Rejection) return sendRejection(reply, afterSeq);
    const record = await ownedTaskStatus(deps.statuses, traceId, accountId);
    if (record instanceof Rejection) return sendRejection(reply, record);
    if (
      afterSeq > 0 &&
      isFinalTaskStatus(record.status) &&
      record.last_seq !== undefined &&
      afterSeq >= record.last_seq
    ) {
      // The client has every event of a finished task. 204 is how SSE says "do not reconnect": a
      // browser EventSource that lost the connection right after the terminal event stops here
      // instead of reconnecting forever.
      return reply.code(204).send();
    }
    const expired = await eventsExpired(deps, accountId, traceId, record);
    if (expired instanceof Rejection) return sendRejection(reply, expired);

    const slot = deps.slots.take(streamCaller);
    if (slot instanceof Rejection) return sendRejection(reply, slot);
    const clientGone = new AbortController();
    try {
      reply.hijack();
      const socket = reply.raw.socket;
      reply.raw.once('close', () => clientGone.abort());
      const signal = AbortSignal.any([clientGone.signal, deps.shutdown]);
      const frames = followTaskEventFrames({
        js: deps.js,
        feed: deps.liveEvents,
        accountId,
        traceId,
        afterSeq,
        signal,
        statuses: deps.statuses,
      });
      try {
        await writeSseStream(reply.raw, frames, { heartbeatMs: deps.heartbeatMs, signal });
      } catch (error) {
        if (error instanceof TaskEventsExpiredError) {
          // Expired just as the stream started reading: the client's reconnect gets the 410.
          deps.log.info({ trace_id: traceId }, 'event stream ended: its events expired');
        } else if (!signal.aborted) deps.log.error({ err: error, trace_id: traceId }, 'event stream failed');
      }
      // The response ended, but a keep-alive connection would stay open and hold the server's close
      // until its idle timeout: a stopping gateway closes it.
      if (deps.shutdown.aborted) socket?.destroySoon();
    } finally {
      slot.release();
    }
    // Hijacked replies skip the request log; this is the stream's line.
    deps.log.info(
      { trace_id: traceId, client_gone: clientGone.signal.aborted, open_streams: deps.slots.open },
      'event stream ended',
    );
  });
}

/**
 * The task a request may follow and whom its stream counts against: from `?token=` (a stream token,
 * for EventSource, which cannot send an API key; it counts against the token's account) or from the
 * caller's key.
 */
async function eventStreamTarget(
  deps: TaskEventRouteDeps,
  request: FastifyRequest<EventsRequest>,
): Promise<{ accountId: string; traceId: string; streamCaller: string } | Rejection> {
  const { token } = request.query as { token?: unknown };
  if (token !== undefined) {
    if (typeof token !== 'string') return new InvalidRequest('token must be given once');
    if (deps.streamTokens === undefined) return new InvalidRequest('stream tokens are not accepted here');
    const granted = streamTokenTarget(deps.streamTokens, token, request.params.trace_id);
    if (granted instanceof Rejection) return granted;
    return { ...granted, streamCaller: `account:${granted.accountId}` };
  }
  const target = await taskRequestTarget(deps.authenticate, request);
  if (target instanceof Rejection) return target;
  return { ...target, streamCaller: eventStreamCaller(target.caller, target.accountId) };
}

function lastEventId(request: FastifyRequest<EventsRequest>): number | Rejection {
  const header = request.headers['last-event-id'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? request.query.last_event_id;
  if (raw === undefined || raw.trim() === '') return 0;
  if (!/^\d{1,15}$/.test(raw.trim())) {
    return new InvalidRequest('Last-Event-ID must be the seq (a non-negative integer) of an event');
  }
  return Number(raw.trim());
}

/**
 * 410 when the task has finished and none of its events is stored any more (the terminal event is stored
 * before the final status is written, so a final status with no event means they expired); undefined
 * otherwise.
 */
async function eventsExpired(
  deps: TaskEventRouteDeps,
  accountId: string,
  traceId: string,
  record: TaskStatusRecord,
): Promise<Rejection | undefined> {
  if (!isFinalTaskStatus(record.status)) return undefined;
  try {
    const expired = await expiredTaskEvents(deps.jsm, deps.statuses, accountId, traceId, record);
    return expired === undefined ? undefined : new EventsExpired(traceId, expired);
  } catch (error) {
    return new ServiceUnavailable('the event stream is unavailable right now; retry', { cause: error });
  }
}
