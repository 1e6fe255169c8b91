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
 *
 * A message on a letter's subject that does not fit the schema (published by hand or by a bug) is left out
 * of listings, counted in `skipped_malformed` and logged; showing or re-driving it is 422
 * MALFORMED_RECORD; deleting it works, and is how an operator clears it.
 */
import { CorruptRecordError, type DeadLetterStore, type StoredDeadLetter } from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import {
  DeadLetterListQuery,
  type DeadLetterList,
  deadLetterView,
  newTraceId,
  TraceIdInput,
  type DeadLetterRedriveReply,
  type SubmitTaskRequestInput,
} from '@agentmesh/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Conflict, InvalidRequest, MalformedRecord, NotFound, Rejection, sendRejection } from '../errors.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface DeadLetterRouteDeps {
  authenticate: AuthenticateRequest;
  deadLetters: DeadLetterStore;
  submitter: TaskSubmitter;
  log: Logger;
}

interface LetterParams {
  Params: { trace_id: string };
}

/** Where the letter a path names would be, as the caller may see it (not read yet). */
async function locateLetter(
  deadLetters: DeadLetterStore,
  request: FastifyRequest<LetterParams>,
): Promise<{ accountId: string; traceId: string } | Rejection> {
  const parsed = TraceIdInput.safeParse(request.params.trace_id);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error, 'trace_id');
  const traceId = parsed.data;
  const accountId = request.managedAccount;
  if (accountId !== undefined) return { accountId, traceId };
  const accounts = await deadLetters.accountsOf(traceId);
  if (accounts.length === 0) return missingLetter(traceId);
  if (accounts.length > 1) {
    return new Conflict(`tasks of several accounts used trace id ${traceId}; name one in x-account-id`, {
      accounts,
    });
  }
  return { accountId: accounts[0]!, traceId };
}

function missingLetter(traceId: string): NotFound {
  return new NotFound(`no dead letter for task ${traceId}`);
}

/** The letter a path names, as the caller may see it. */
async function findLetter(
  deadLetters: DeadLetterStore,
  request: FastifyRequest<LetterParams>,
): Promise<StoredDeadLetter | Rejection> {
  const located = await locateLetter(deadLetters, request);
  if (located instanceof Rejection) return located;
  const { accountId, traceId } = located;
  try {
    return (await deadLetters.get(accountId, traceId)) ?? missingLetter(traceId);
  } catch (error) {
    if (!(error instanceof CorruptRecordError)) throw error;
    return new MalformedRecord(
      `the dead letter of task ${traceId} does not fit the dead letter schema; it can only be deleted`,
      { trace_id: traceId, account_id: accountId },
    );
  }
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
    if (found.malformed.length > 0) {
      deps.log.warn(
        {
          skipped_malformed: found.malformed.length,
          letters: found.malformed.slice(0, 20).map((m) => ({
            account_id: m.accountId,
            trace_id: m.traceId,
            seq: m.seq,
          })),
        },
        'dead letters that do not fit the schema were left out of a listing; delete them',
      );
    }
    const answer: DeadLetterList = {
      dead_letters: found.letters.map(({ letter }) => deadLetterView(letter)),
      skipped_malformed: found.malformed.length,
    };
    return answer;
  });

  app.get<LetterParams>('/dead-letters/:trace_id', async (request, reply) => {
    const found = await findLetter(deadLetters, request);
    if (found instanceof Rejection) return sendRejection(reply, found);
    return deadLetterView(found.letter);
  });

  app.delete<LetterParams>('/dead-letters/:trace_id', async (request, reply) => {
    // Not read first: a letter that does not fit the schema is dropped all the same.
    const located = await locateLetter(deadLetters, request);
    if (located instanceof Rejection) return sendRejection(reply, located);
    const { accountId, traceId } = located;
    if (!(await deadLetters.remove(accountId, traceId))) {
      return sendRejection(reply, missingLetter(traceId));
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
