/**
 * `GET /v1/events`: every event of one account's tasks as Server-Sent Events, live from now on (no
 * replay; `agentmesh tail`). The frames are the task stream's (`id:` = the task's seq, `event:` = type,
 * `data:` = the event JSON with its `trace_id`), so `Last-Event-ID` means nothing here and is ignored.
 * An API key follows its own account; an admin or trusted caller the account it names in
 * `x-account-id` or `?account=`. Fed by the gateway's live feed (one subscription, fanned out in
 * memory), so it needs SSE_LIVE_FEED; counted against the same stream caps as task streams.
 */
import { AccountId } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AccountEventTail } from '../account-event-tail.js';
import { CallerKind, requireAccount, type AccountCaller } from '../auth.js';
import { Forbidden, InvalidRequest, Rejection, sendRejection, ServiceUnavailable } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { writeSseStream } from '../sse-stream.js';
import type { AuthenticateRequest } from './request-caller.js';

/** What one tail may hold for a client that reads slower than its account's tasks write. */
export const TAIL_MAX_PENDING_BYTES = 1024 * 1024;

export interface AccountEventRouteDeps {
  authenticate: AuthenticateRequest;
  liveEvents: LiveEventFeed | undefined;
  heartbeatMs: number;
  slots: EventStreamSlots;
  shutdown: AbortSignal;
  log: Logger;
}

interface AccountEventsRequest {
  Querystring: { account?: string };
}

export function registerAccountEventRoutes(app: FastifyInstance, deps: AccountEventRouteDeps): void {
  app.get<AccountEventsRequest>('/v1/events', async (request, reply) => {
    const caller = await tailCaller(deps.authenticate, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const feed = deps.liveEvents;
    if (feed === undefined) {
      return sendRejection(
        reply,
        new ServiceUnavailable(
          "following an account's events needs the live event feed (SSE_LIVE_FEED=true)",
        ),
      );
    }
    const slot = deps.slots.take(eventStreamCaller(caller, caller.accountId));
    if (slot instanceof Rejection) return sendRejection(reply, slot);
    const clientGone = new AbortController();
    const signal = AbortSignal.any([clientGone.signal, deps.shutdown]);
    // Following starts before the answer's headers: every event stored after the client saw 200 reaches it.
    const tail = new AccountEventTail(feed, caller.accountId, {
      maxPendingBytes: TAIL_MAX_PENDING_BYTES,
      signal,
    });
    try {
      reply.hijack();
      const socket = reply.raw.socket;
      reply.raw.once('close', () => clientGone.abort());
      try {
        await writeSseStream(reply.raw, tail, { heartbeatMs: deps.heartbeatMs, signal });
      } catch (error) {
        if (!signal.aborted) deps.log.error({ err: error }, 'account event stream failed');
      }
      if (deps.shutdown.aborted) socket?.destroySoon();
    } finally {
      tail.close();
      slot.release();
    }
    deps.log.info(
      {
        account_id: caller.accountId,
        client_gone: clientGone.signal.aborted,
        fell_behind: tail.fellBehind,
        open_streams: deps.slots.open,
      },
      'account event stream ended',
    );
  });
}

/** The caller and the account it follows: its own, or (admin, trusted) the one it names. */
async function tailCaller(
  authenticate: AuthenticateRequest,
  request: FastifyRequest<AccountEventsRequest>,
): Promise<AccountCaller | Rejection> {
  const caller = await authenticate(request);
  if (caller instanceof Rejection) return caller;
  const named = request.query.account;
  if (named === undefined) return requireAccount(caller);
  if (!AccountId.safeParse(named).success) {
    return new InvalidRequest('?account= must be 1-128 characters of A-Z, a-z, 0-9, "_" or "-"');
  }
  if (caller.accountId !== undefined && caller.accountId !== named) {
    return new Forbidden(
      caller.kind === CallerKind.API_KEY
        ? "an API key follows its own account's events only"
        : '?account= names another account than x-account-id',
    );
  }
  return { ...caller, accountId: named };
}
