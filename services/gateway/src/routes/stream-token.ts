/**
 * `POST /v1/tasks/:trace_id/stream-token`: a fresh stream token for one of the caller's tasks (the submit
 * reply carries one too; this is for a page that opens an older task, or whose token expired before it
 * reconnected). The token opens that task's event stream as `?token=` and nothing else.
 */
import type { StreamTokenReply } from '@agentmesh/protocol';
import type { TaskStatusStore } from '@agentmesh/bus';
import type { FastifyInstance } from 'fastify';
import { Rejection, sendRejection } from '../errors.js';
import type { StreamTokens } from '../stream-tokens.js';
import { ownedTaskStatus, taskRequestTarget } from '../task-lookup.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface StreamTokenRouteDeps {
  authenticate: AuthenticateRequest;
  statuses: TaskStatusStore;
  streamTokens: StreamTokens;
}

export function registerStreamTokenRoute(app: FastifyInstance, deps: StreamTokenRouteDeps): void {
  app.post<{ Params: { trace_id: string } }>('/v1/tasks/:trace_id/stream-token', async (request, reply) => {
    const target = await taskRequestTarget(deps.authenticate, request);
    if (target instanceof Rejection) return sendRejection(reply, target);
    // Only a task of the caller's account gets one: another account's is as missing as no task.
    const record = await ownedTaskStatus(deps.statuses, target.traceId, target.accountId);
    if (record instanceof Rejection) return sendRejection(reply, record);
    const { token, expiresAt } = deps.streamTokens.issue(target.accountId, target.traceId);
    const body: StreamTokenReply = {
      trace_id: target.traceId,
      stream_token: token,
      expires_at: expiresAt.toISOString(),
      events_url: `/v1/tasks/${target.traceId}/events?token=${encodeURIComponent(token)}`,
    };
    return reply.code(201).send(body);
  });
}
