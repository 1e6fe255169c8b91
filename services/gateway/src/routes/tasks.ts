/**
 * The inference plane: `POST /v1/tasks` (and seed 002's alias `POST /v1/run_workflow`) submits a task
 * (the reply carries a `stream_token` for the task's event stream),
 * `GET /v1/tasks/:trace_id` reads its status, `POST /v1/tasks/:trace_id/cancel` cancels it.
 */
import type { TaskStatusStore } from '@agentmesh/bus';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { InvalidRequest, Rejection, sendRejection } from '../errors.js';
import type { StreamTokens } from '../stream-tokens.js';
import type { TaskCanceller } from '../task-cancellation.js';
import { settledTaskStatus, taskRequestTarget } from '../task-lookup.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface TaskRouteDeps {
  authenticate: AuthenticateRequest;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  statuses: TaskStatusStore;
  /** Reads a task's last stored event, for a status record that lags behind its terminal event. */
  jsm: JetStreamManager;
  /** Issues the reply's `stream_token`; undefined: replies carry none. */
  streamTokens?: StreamTokens;
}

interface TraceParams {
  trace_id: string;
}

const CancelRequest = z.strictObject({ reason: z.string().max(1024).optional() }).optional();

export function registerTaskRoutes(app: FastifyInstance, deps: TaskRouteDeps): void {
  for (const path of ['/v1/tasks', '/v1/run_workflow']) {
    app.post(path, async (request, reply) => {
      const caller = await deps.authenticate(request);
      if (caller instanceof Rejection) return sendRejection(reply, caller);
      const outcome = await deps.submitter.submit(request.body, caller);
      if (outcome instanceof Rejection) return sendRejection(reply, outcome);
      const token = deps.streamTokens?.issue(outcome.accountId, outcome.reply.trace_id);
      return reply.code(202).send(token ? { ...outcome.reply, stream_token: token.token } : outcome.reply);
    });
  }

  app.get<{ Params: TraceParams }>('/v1/tasks/:trace_id', async (request, reply) => {
    const target = await taskRequestTarget(deps.authenticate, request);
    if (target instanceof Rejection) return sendRejection(reply, target);
    const record = await settledTaskStatus(deps.statuses, deps.jsm, target.traceId, target.accountId);
    if (record instanceof Rejection) return sendRejection(reply, record);
    return reply.send(record);
  });

  app.post<{ Params: TraceParams }>('/v1/tasks/:trace_id/cancel', async (request, reply) => {
    const target = await taskRequestTarget(deps.authenticate, request);
    if (target instanceof Rejection) return sendRejection(reply, target);
    const body = CancelRequest.safeParse(request.body ?? undefined);
    if (!body.success) return sendRejection(reply, InvalidRequest.fromZod(body.error));
    const record = await deps.canceller.cancel(target.traceId, target.accountId, body.data?.reason);
    if (record instanceof Rejection) return sendRejection(reply, record);
    return reply.code(202).send(record);
  });
}
