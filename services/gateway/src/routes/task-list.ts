/**
 * What a caller needs to start and find tasks without the management plane (the web console uses both):
 * `GET /v1/agents`, the agents a task of its account may name — ids, names and descriptions only, never
 * prompts, models or tools —, and `GET /v1/tasks?limit=`, its account's most recently written task
 * records, newest first (at most {@link MAX_TASK_LIST}), filtered by the query of `TaskListQuery` (status,
 * agent, error code, dates, text; a filtered listing reads at most {@link TASK_SCAN_LIMIT} records); and `GET /v1/caller`, what kind of key the caller
 * presented (an admin key acts for the account it names in `x-account-id`, so the console offers accounts).
 */
import { accountScope, type AgentStore, type TaskStatusStore } from '@agentmesh/bus';
import {
  TaskListQuery,
  taskMatches,
  type AgentListReply,
  type CallerReply,
  type TaskListReply,
} from '@agentmesh/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { requireAccount, type AccountCaller } from '../auth.js';
import { InvalidRequest, Rejection, sendRejection, ServiceUnavailable } from '../errors.js';
import type { AuthenticateRequest } from './request-caller.js';

export { MAX_TASK_LIST } from '@agentmesh/protocol';
/** How many of an account's most recent task records a filtered listing reads, at most. */
export const TASK_SCAN_LIMIT = 2_000;

export interface TaskListRouteDeps {
  authenticate: AuthenticateRequest;
  statuses: TaskStatusStore;
  agents: AgentStore;
}

async function accountCaller(
  authenticate: AuthenticateRequest,
  request: FastifyRequest,
): Promise<AccountCaller | Rejection> {
  const caller = await authenticate(request);
  return caller instanceof Rejection ? caller : requireAccount(caller);
}

export function registerTaskListRoutes(app: FastifyInstance, deps: TaskListRouteDeps): void {
  app.get('/v1/tasks', async (request, reply) => {
    const caller = await accountCaller(deps.authenticate, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const query = TaskListQuery.safeParse(request.query ?? {});
    if (!query.success) return sendRejection(reply, InvalidRequest.fromZod(query.error));
    try {
      const { limit, ...filters } = query.data;
      const filtered = Object.values(filters).some((value) => value !== undefined);
      const body: TaskListReply = {
        tasks: filtered
          ? await deps.statuses.listMatching(
              caller.accountId,
              limit,
              (record) => taskMatches(record, filters),
              TASK_SCAN_LIMIT,
            )
          : await deps.statuses.listRecent(caller.accountId, limit),
      };
      return reply.send(body);
    } catch (error) {
      return sendRejection(
        reply,
        new ServiceUnavailable('tasks cannot be listed right now; retry', { cause: error }),
      );
    }
  });

  app.get('/v1/caller', async (request, reply) => {
    const caller = await deps.authenticate(request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const body: CallerReply = {
      kind: caller.kind,
      ...(caller.accountId === undefined ? {} : { account_id: caller.accountId }),
    };
    return reply.send(body);
  });

  app.get('/v1/agents', async (request, reply) => {
    const caller = await accountCaller(deps.authenticate, request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    try {
      const visible = await deps.agents.listVisible(accountScope(caller.accountId));
      const body: AgentListReply = {
        agents: visible.map(({ agent }) => ({
          workflow_id: agent.workflow_id,
          ...(agent.name !== undefined ? { name: agent.name } : {}),
          ...(agent.description !== undefined ? { description: agent.description } : {}),
          version: agent.version,
        })),
      };
      return reply.send(body);
    } catch (error) {
      return sendRejection(
        reply,
        new ServiceUnavailable('agents cannot be listed right now; retry', { cause: error }),
      );
    }
  });
}
