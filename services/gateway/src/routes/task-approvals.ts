/**
 * Human approval of a parked task's tool calls: `GET /v1/tasks/:trace_id/approvals` lists the approvals of
 * its current park, `POST /v1/tasks/:trace_id/approvals/:call_id` ({approve, comment?}) decides one. Only
 * the task's own account sees or decides them; another account's task is 404 like a missing one.
 */
import { ApprovalDecisionRequest } from '@agentmesh/protocol';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { InvalidRequest, Rejection, sendRejection } from '../errors.js';
import type { ApprovalDesk } from '../task-approvals.js';
import { taskRequestTarget } from '../task-lookup.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface TaskApprovalRouteDeps {
  authenticate: AuthenticateRequest;
  approvals: ApprovalDesk;
}

const CallId = z.string().min(1).max(256);

export function registerTaskApprovalRoutes(app: FastifyInstance, deps: TaskApprovalRouteDeps): void {
  app.get<{ Params: { trace_id: string } }>('/v1/tasks/:trace_id/approvals', async (request, reply) => {
    const target = await taskRequestTarget(deps.authenticate, request);
    if (target instanceof Rejection) return sendRejection(reply, target);
    const approvals = await deps.approvals.list(target.traceId, target.accountId);
    if (approvals instanceof Rejection) return sendRejection(reply, approvals);
    return reply.send(approvals);
  });

  app.post<{ Params: { trace_id: string; call_id: string } }>(
    '/v1/tasks/:trace_id/approvals/:call_id',
    async (request, reply) => {
      const target = await taskRequestTarget(deps.authenticate, request);
      if (target instanceof Rejection) return sendRejection(reply, target);
      const callId = CallId.safeParse(request.params.call_id);
      if (!callId.success) return sendRejection(reply, InvalidRequest.fromZod(callId.error, 'call_id'));
      const body = ApprovalDecisionRequest.safeParse(request.body);
      if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
      const approvals = await deps.approvals.decide(target.traceId, target.accountId, callId.data, body.data);
      if (approvals instanceof Rejection) return sendRejection(reply, approvals);
      return reply.send(approvals);
    },
  );
}
