/**
 * Finding a caller's own task: trace ids from paths (32 hex or a UUID, normalised) and the task's
 * status record. Records are kept per account, so a lookup only ever reads the caller's own: another
 * account's task with the same id is exactly as invisible as a missing one.
 */
import {
  finalStatusFields,
  isFinalTaskStatus,
  isTerminalEvent,
  TraceIdInput,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { readLastTaskEvent, type TaskStatusStore } from '@agentmesh/bus';
import type { JetStreamManager } from '@nats-io/jetstream';
import type { FastifyRequest } from 'fastify';
import { requireAccount, type Caller } from './auth.js';
import { InvalidRequest, NotFound, Rejection, ServiceUnavailable } from './errors.js';
import type { AuthenticateRequest } from './routes/request-caller.js';

function parseTraceIdParam(value: string): string | Rejection {
  const parsed = TraceIdInput.safeParse(value);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error, 'trace_id');
}

/** Who asks about which task: the caller, its account and the `:trace_id` of the path, all checked. */
export async function taskRequestTarget(
  authenticate: AuthenticateRequest,
  request: FastifyRequest<{ Params: { trace_id: string } }>,
): Promise<{ caller: Caller; accountId: string; traceId: string } | Rejection> {
  const caller = await authenticate(request);
  if (caller instanceof Rejection) return caller;
  const account = requireAccount(caller);
  if (account instanceof Rejection) return account;
  const traceId = parseTraceIdParam(request.params.trace_id);
  if (traceId instanceof Rejection) return traceId;
  return { caller, accountId: account.accountId, traceId };
}

export async function ownedTaskStatus(
  statuses: TaskStatusStore,
  traceId: string,
  accountId: string,
): Promise<TaskStatusRecord | Rejection> {
  let record: TaskStatusRecord | undefined;
  try {
    record = await statuses.get(accountId, traceId);
  } catch (error) {
    return new ServiceUnavailable('task status is unavailable right now; retry', { cause: error });
  }
  return record?.account_id === accountId ? record : new NotFound(`no task ${traceId}`);
}

/**
 * The caller's task's status as its event log settles it. An attempt writes the final status right after
 * storing the terminal event, so a client that saw `done` on the stream and asks at once can find the
 * record still `running`: for a record not yet final, the task's last stored event is read, and a terminal
 * one is what the answer says. A failed read leaves the record as it is (the next read settles it).
 *
 * The record is read again once a terminal event is found: what led to that event (a cancel's
 * `cancel_requested_at`, above all) was written to the record before it, possibly after the first read, and
 * an answer saying `cancelled` without it would be a record no writer ever stored.
 */
export async function settledTaskStatus(
  statuses: TaskStatusStore,
  jsm: JetStreamManager,
  traceId: string,
  accountId: string,
): Promise<TaskStatusRecord | Rejection> {
  const first = await ownedTaskStatus(statuses, traceId, accountId);
  if (first instanceof Rejection || isFinalTaskStatus(first.status)) return first;
  const last = await readLastTaskEvent(jsm, { accountId, traceId }).catch(() => undefined);
  if (last === undefined || !isTerminalEvent(last)) return first;
  const again = await ownedTaskStatus(statuses, traceId, accountId);
  const record = again instanceof Rejection ? first : again;
  if (isFinalTaskStatus(record.status)) return record;
  return { ...record, ...finalStatusFields(last), attempt: Math.max(record.attempt, last.attempt) };
}
