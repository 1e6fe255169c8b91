/**
 * What both OpenAI doors (chat completions, `openai/`, and the Responses API, `openai-responses/`) ask
 * first, answered in OpenAI's error shape: who calls, for which account, and which agent `model` names
 * (`workflow_id` or `workflow_id@version`; the submission checks the version). The agent is the account's
 * own or the shared catalogue's, as `GET /v1/models` lists them.
 */
import { accountScope, type AgentStore, type ScopedAgent } from '@agentmesh/bus';
import { WorkflowRef } from '@agentmesh/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { requireAccount, type Caller } from '../auth.js';
import { Rejection, ServiceUnavailable } from '../errors.js';
import type { AuthenticateRequest } from '../routes/request-caller.js';
import type { OpenAiRefusal } from './openai-errors.js';
import { modelNotFound, refusalOf } from './openai-errors.js';

export async function openAiCallerOf(
  authenticate: AuthenticateRequest,
  request: FastifyRequest,
): Promise<{ caller: Caller; accountId: string } | OpenAiRefusal> {
  const caller = await authenticate(request);
  if (caller instanceof Rejection) return refusalOf(caller);
  const account = requireAccount(caller);
  if (account instanceof Rejection) return refusalOf(account);
  return { caller, accountId: account.accountId };
}

export async function resolveAgentModel(
  agents: AgentStore,
  accountId: string,
  model: string,
): Promise<ScopedAgent | OpenAiRefusal> {
  const ref = WorkflowRef.safeParse(model);
  if (!ref.success) return modelNotFound(model);
  try {
    return (await agents.resolve(accountScope(accountId), ref.data.workflow_id)) ?? modelNotFound(model);
  } catch (error) {
    return refusalOf(agentsUnavailable(error));
  }
}

export const agentsUnavailable = (cause: unknown): Rejection =>
  new ServiceUnavailable('agents cannot be read right now; retry', { cause });

export function sendOpenAiRefusal(reply: FastifyReply, refusal: OpenAiRefusal): FastifyReply {
  return reply.code(refusal.httpStatus).headers(refusal.headers).send(refusal.toBody());
}
