/**
 * Dead letters (tasks that ran out of deliveries, MESH_DEAD_LETTERS): `GET /dead-letters` (filter by
 * `workflow_id`, `limit`), `GET|DELETE /dead-letters/:trace_id` and `POST /dead-letters/:trace_id/redrive`.
 *
 * Tenancy: a caller naming an account sees and changes that account's letters only (another account's is a
 * 404, as if it did not exist); an admin key naming no account sees every account's, and finds a letter by
 * its trace id alone unless two accounts used that trace id (409: name the account).
 *
 * A re-drive submits the task's original request (account, workflow, user, messages, variables) as a NEW task
 * through the normal submission path — its own trace id, limits and rate limits, a fresh assembly and so the
 * account's current credentials — and marks the letter re-driven with the new trace id (compare-and-set: of
 * two re-drives of one letter, one wins and the other gets 409). A submission that is refused leaves the
 * letter as it was.
 */
import type { DeadLetterStore, StoredDeadLetter } from '@agentmesh/bus';
import {
  DeadLetterListQuery,
  deadLetterView,
  newTraceId,
  TraceIdInput,
  type DeadLetterRedriveReply,
  type SubmitTaskRequestInput,
} from '@agentmesh/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Conflict, InvalidRequest, NotFound, Rejection, sendRejection } from '../errors.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface DeadLetterRouteDeps {
  authenticate: AuthenticateRequest;
  deadLetters: DeadLetterStore;
  submitter: TaskSubmitter;
}

interface LetterParams {
  Params: { trace_id: string };
}

/** The letter a path names, as the caller may see it. */
async function findLetter(
  deadLetters: DeadLetterStore,
  request: FastifyRequest<LetterParams>,
): Promise<StoredDeadLetter | Rejection> {
  const parsed = TraceIdInput.safeParse(request.params.trace_id);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error, 'trace_id');
  const traceId = parsed.data;
  const missing = new NotFound(`no dead letter for task ${traceId}`);
  let accountId = request.managedAccount;
  if (accountId === undefined) {
    const accounts = await deadLetters.accountsOf(traceId);
    if (accounts.length === 0) return missing;
    if (accounts.length > 1) {
      return new Conflict(`tasks of several accounts used trace id ${traceId}; name one in x-account-id`, {
        accounts,
      });
    }
    accountId = accounts[0]!;
  }
  return (await deadLetters.get(accountId, traceId)) ?? missing;
}

export function registerDeadLetterRoutes(app: FastifyInstance, deps: DeadLetterRouteDeps): void {
  const { deadLetters } = deps;

  app.get('/dead-letters', async (request, reply) => {
    const query = DeadLetterListQuery.safeParse(request.query ?? {});
    if (!query.success) return sendRejection(reply, InvalidRequest.fromZod(query.error));
    const found = await deadLetters.list({
      ...(request.managedAccount === undefined ? {} : { accountId: request.managedAccount }),
      ...(query.data.workflow_id === undefined ? {} : { workflowId: query.data.workflow_id }),
      limit: query.data.limit,
    });
    return { dead_letters: found.map(({ letter }) => deadLetterView(letter)) };
  });

  app.get<LetterParams>('/dead-letters/:trace_id', async (request, reply) => {
    const found = await findLetter(deadLetters, request);
    if (found instanceof Rejection) return sendRejection(reply, found);
    return deadLetterView(found.letter);
  });

  app.delete<LetterParams>('/dead-letters/:trace_id', async (request, reply) => {
    const found = await findLetter(deadLetters, request);
    if (found instanceof Rejection) return sendRejection(reply, found);
    const { account_id: accountId, trace_id: traceId } = found.letter;
    if (!(await deadLetters.remove(accountId, traceId))) {
      return sendRejection(reply, new NotFound(`no dead letter for task ${traceId}`));
    }
    return reply.code(204).send();
  });

  app.post<LetterParams>('/dead-letters/:trace_id/redrive', async (request, reply) => {
    const caller = await deps.authenticate(request);
    if (caller instanceof Rejection) return sendRejection(reply, caller);
    const found = await findLetter(deadLetters, request);
    if (found instanceof Rejection) return sendRejection(reply, found);
    const { letter, seq } = found;
    if (letter.redriven !== undefined) {
      return sendRejection(
        reply,
        new Conflict(`task ${letter.trace_id} was re-driven already, as ${letter.redriven.trace_id}`, {
          redriven_to: letter.redriven.trace_id,
        }),
      );
    }
    const traceId = newTraceId();
    const marked = await deadLetters.replace(
      { ...letter, redriven: { trace_id: traceId, redriven_at: new Date().toISOString() } },
      seq,
    );
    if (marked === undefined) {
      return sendRejection(reply, new Conflict(`the dead letter of ${letter.trace_id} changed meanwhile`));
    }
    const body: SubmitTaskRequestInput = {
      workflow_id: letter.workflow_id,
      user_id: letter.user_id,
      messages: letter.input.messages,
      variables: letter.input.variables,
      trace_id: traceId,
    };
    const outcome = await deps.submitter.submit(body, {
      kind: caller.kind,
      accountId: letter.account_id,
      ...(letter.account_type === undefined ? {} : { accountType: letter.account_type }),
    });
    if (outcome instanceof Rejection) {
      // Nothing was queued: the letter goes back to how it was, so it can be re-driven later.
      await deadLetters.replace(letter, marked.seq);
      return sendRejection(reply, outcome);
    }
    const answer: DeadLetterRedriveReply = { ...outcome.reply, redriven_from: letter.trace_id };
    return reply.code(202).send(answer);
  });
}
