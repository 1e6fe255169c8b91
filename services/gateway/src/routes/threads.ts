/**
 * Threads over HTTP: `POST /v1/threads`, `GET /v1/threads?limit=&before=`, `GET /v1/threads/:thread_id`,
 * `DELETE /v1/threads/:thread_id` (see thread-api.ts), and `GET /v1/threads/:thread_id/events`: every event
 * of every run of the thread as Server-Sent Events (`id:` = the MESH_EVENTS sequence, so `Last-Event-ID`
 * resumes after it; `event:` = the type; `data:` = the event JSON with its `trace_id`), from the thread's
 * creation, live until the client goes. An API key acts for its own account; an admin or trusted caller for
 * the one it names in `x-account-id`.
 */
import { followThreadEvents, type ThreadStore } from '@agentmesh/bus';
import { isThreadId, sseEventName } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAccount, type AccountCaller } from '../auth.js';
import { InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import { writeSseStream } from '../sse-stream.js';
import type { ThreadApi } from '../thread-api.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface ThreadRouteDeps {
  authenticate: AuthenticateRequest;
  api: ThreadApi;
  threads: ThreadStore;
  js: JetStreamClient;
  heartbeatMs: number;
  slots: EventStreamSlots;
  shutdown: AbortSignal;
  log: Logger;
}

interface ThreadParams {
  Params: { thread_id: string };
}

async function accountOf(deps: ThreadRouteDeps, request: FastifyRequest): Promise<AccountCaller | Rejection> {
  const caller = await deps.authenticate(request);
  if (caller instanceof Rejection) return caller;
  return requireAccount(caller);
}

function threadIdOf(request: FastifyRequest<ThreadParams>): string | Rejection {
  const id = request.params.thread_id;
  return isThreadId(id)
    ? id
    : new InvalidRequest('thread id must be 1-64 characters of A-Z, a-z, 0-9, "_" or "-"');
}

function send(reply: FastifyReply, outcome: unknown, code = 200): FastifyReply {
  return outcome instanceof Rejection ? sendRejection(reply, outcome) : reply.code(code).send(outcome);
}

export function registerThreadRoutes(app: FastifyInstance, deps: ThreadRouteDeps): void {
  app.post('/v1/threads', async (request, reply) => {
    const caller = await accountOf(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    return send(reply, await deps.api.create(caller.accountId, request.body), 201);
  });

  app.get<{ Querystring: { limit?: string; before?: string } }>('/v1/threads', async (request, reply) => {
    const caller = await accountOf(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const raw = request.query.limit;
    const limit = raw === undefined ? undefined : Number(raw);
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 200)) {
      return sendRejection(reply, new InvalidRequest('limit must be an integer from 1 to 200'));
    }
    const before = request.query.before;
    if (before !== undefined && before.length > 200) {
      return sendRejection(reply, new InvalidRequest('before is at most 200 characters'));
    }
    return send(reply, await deps.api.list(caller.accountId, limit, before));
  });

  app.get<ThreadParams>('/v1/threads/:thread_id', async (request, reply) => {
    const caller = await accountOf(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const threadId = threadIdOf(request);
    if (threadId instanceof Rejection) return sendRejection(reply, threadId);
    return send(reply, await deps.api.get(caller.accountId, threadId));
  });

  app.delete<ThreadParams>('/v1/threads/:thread_id', async (request, reply) => {
    const caller = await accountOf(deps, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const threadId = threadIdOf(request);
    if (threadId instanceof Rejection) return sendRejection(reply, threadId);
    return send(reply, await deps.api.delete(caller.accountId, threadId));
  });

  app.get<ThreadParams & { Querystring: { last_event_id?: string } }>(
    '/v1/threads/:thread_id/events',
    async (request, reply) => {
      const caller = await accountOf(deps, request);
      if (caller instanceof Rejection) return sendRejection(reply, caller);
      const threadId = threadIdOf(request);
      if (threadId instanceof Rejection) return sendRejection(reply, threadId);
      const header = request.headers['last-event-id'];
      const raw = (Array.isArray(header) ? header[0] : header) ?? request.query.last_event_id;
      if (raw !== undefined && raw.trim() !== '' && !/^\d{1,15}$/.test(raw.trim())) {
        return sendRejection(
          reply,
          new InvalidRequest('Last-Event-ID must be the id of an event of this stream'),
        );
      }
      const afterStreamSeq = raw === undefined || raw.trim() === '' ? undefined : Number(raw.trim());
      const { accountId } = caller;
      const found = await deps.threads.get(accountId, threadId).catch(() => undefined);
      if (found === undefined)
        return sendRejection(reply, new NotFound(`no thread ${threadId} in this account`));
      const slot = deps.slots.take(eventStreamCaller(caller, accountId));
      if (slot instanceof Rejection) return sendRejection(reply, slot);
      const clientGone = new AbortController();
      const signal = AbortSignal.any([clientGone.signal, deps.shutdown]);
      const events = followThreadEvents(deps.js, {
        accountId,
        runs: async () => (await deps.threads.get(accountId, threadId))?.record.runs,
        since: new Date(found.record.created_at),
        ...(afterStreamSeq === undefined ? {} : { afterStreamSeq }),
        signal,
      });
      async function* frames(): AsyncGenerator<string> {
        for await (const { streamSeq, event } of events) {
          yield `id: ${streamSeq}\nevent: ${sseEventName(event.type)}\ndata: ${JSON.stringify(event)}\n\n`;
        }
      }
      try {
        reply.hijack();
        reply.raw.once('close', () => clientGone.abort());
        try {
          await writeSseStream(reply.raw, frames(), { heartbeatMs: deps.heartbeatMs, signal });
        } catch (error) {
          if (!signal.aborted) deps.log.error({ err: error }, 'thread event stream failed');
        }
        if (deps.shutdown.aborted) reply.raw.socket?.destroySoon();
      } finally {
        slot.release();
      }
      return reply;
    },
  );
}
