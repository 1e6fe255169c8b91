/**
 * MESH_DEAD_LETTERS: one message per task that ran out of deliveries, `mesh.dead.<account>.<trace_id>`.
 * The executor adds letters (from its last delivery, or from JetStream's MAX_DELIVERIES advisory); the
 * gateway lists, reads, marks re-driven and drops them.
 *
 * Adding is idempotent: the publish expects the task's subject to be empty (and carries Nats-Msg-Id
 * `<account>.<trace_id>`), so the executor and the advisory listener may both find the same task dead and
 * only the first letter stands. Changing a letter (marking it re-driven, or undoing that) expects the
 * subject's last sequence to be the one read, so two re-drives of one letter cannot both win.
 *
 * Listing reads the stream's subjects (stream info with a subject filter) and then the last message of
 * each: no consumer, so the readers need no right to create one.
 *
 * A message that does not fit the DeadLetter schema (published by hand, or by a bug) must not take an
 * account's letters down: a listing leaves it out and names it in `malformed`, `get` throws
 * CorruptRecordError for it, and `remove` drops it without reading it.
 */
import {
  DeadLetter,
  deadLetterSubject,
  deadLettersWildcard,
  Streams,
  Subjects,
  taskKey,
  type AssembledTask,
  type DeadLetterReason,
  type DeadLetterSource,
} from '@agentmesh/protocol';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import {
  JetStreamApiCodes,
  PubHeaders,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { CorruptRecordError } from '../errors.js';
import { decodeJson, encodeJson } from '../json.js';
import { isJetStreamApiError } from '../jetstream-api-error.js';

const STREAM = Streams.DEAD_LETTERS.name;

/** A stored dead letter and its stream sequence (what a change of it expects). */
export interface StoredDeadLetter {
  letter: DeadLetter;
  seq: number;
}

export interface DeadLetterFilter {
  /** Only this account's letters; every account's when absent. */
  accountId?: string;
  workflowId?: string;
  limit: number;
}

/** A message on a dead letter's subject that is no DeadLetter. */
export interface MalformedDeadLetter {
  accountId: string;
  traceId: string;
  seq: number;
}

export interface DeadLetterListing {
  /** The letters matching the filter, newest first. */
  letters: StoredDeadLetter[];
  /** The messages that do not fit the schema, left out of `letters` (whatever the filter). */
  malformed: MalformedDeadLetter[];
}

export interface DeadLetterCause {
  reason: DeadLetterReason;
  attempts: number;
  source: DeadLetterSource;
  consumer?: string;
  now?: Date;
}

/** The dead letter of an assembled task: its identity and input, never its runtime_config (and vault). */
export function deadLetterOf(task: AssembledTask, cause: DeadLetterCause): DeadLetter {
  const meta = task.task_meta;
  return DeadLetter.parse({
    trace_id: meta.trace_id,
    account_id: meta.account_id,
    account_type: meta.account_type,
    workflow_id: meta.workflow_id,
    user_id: meta.user_id,
    submitted_at: meta.submitted_at,
    reason: cause.reason,
    attempts: cause.attempts,
    dead_at: (cause.now ?? new Date()).toISOString(),
    source: cause.source,
    consumer: cause.consumer,
    input: task.input,
    limits: task.limits,
  });
}

const decoder = new TextDecoder();

/** A letter names the task its subject does: one naming another account's task is not shown as this one's. */
function isLetterOf(letter: DeadLetter, subject: string): boolean {
  return deadLetterSubject(letter.account_id, letter.trace_id) === subject;
}

function parseJsonOrUndefined(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data)) as unknown;
  } catch {
    return undefined;
  }
}

function isNotFound(error: unknown): boolean {
  return isJetStreamApiError(error, JetStreamApiCodes.NoMessageFound, JetStreamApiCodes.StreamNotFound);
}

function isWrongLastSequence(error: unknown): boolean {
  return isJetStreamApiError(error, JetStreamApiCodes.StreamWrongLastSequence);
}

/** Set by hand: the client leaves a last-subject-sequence expectation of 0 ("no message yet") out. */
function expectEmptySubject(): MsgHdrs {
  const headers = natsHeaders();
  headers.set(PubHeaders.ExpectedLastSubjectSequenceHdr, '0');
  return headers;
}

export class DeadLetterStore {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
  ) {}

  /** Stores `letter` unless the task has one already; true when this call stored it. */
  async add(letter: DeadLetter): Promise<boolean> {
    try {
      const ack = await this.js.publish(
        deadLetterSubject(letter.account_id, letter.trace_id),
        encodeJson(DeadLetter.parse(letter)),
        { msgID: taskKey(letter.account_id, letter.trace_id), headers: expectEmptySubject() },
      );
      return !ack.duplicate;
    } catch (error) {
      if (isWrongLastSequence(error)) return false;
      throw error;
    }
  }

  /** The task's letter; throws CorruptRecordError when the message stored for it is no DeadLetter. */
  async get(accountId: string, traceId: string): Promise<StoredDeadLetter | undefined> {
    const subject = deadLetterSubject(accountId, traceId);
    const message = await this.lastMessage(subject);
    if (message === undefined) return undefined;
    const letter = decodeJson(DeadLetter, message.data, `${subject}#${message.seq}`);
    if (!isLetterOf(letter, subject)) throw new CorruptRecordError(`${subject}#${message.seq}`);
    return { letter, seq: message.seq };
  }

  private async lastMessage(subject: string): Promise<{ data: Uint8Array; seq: number } | undefined> {
    try {
      const message = await this.jsm.streams.getMessage(STREAM, { last_by_subj: subject });
      return message === null ? undefined : { data: message.data, seq: message.seq };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * The accounts holding a letter for `traceId` (trace ids are scoped by account, so several may): how an
   * admin naming no account finds a letter by its trace id alone.
   */
  async accountsOf(traceId: string): Promise<string[]> {
    const info = await this.jsm.streams.info(STREAM, {
      subjects_filter: `${Subjects.DEAD_LETTERS_PREFIX}.*.${deadLetterSubject('x', traceId).split('.').at(-1)!}`,
    });
    return Object.keys(info.state.subjects ?? {})
      .map((subject) => subject.split('.')[2])
      .filter((account): account is string => account !== undefined);
  }

  /** The letters matching `filter`, newest first, and the messages left out for not being letters. */
  async list(filter: DeadLetterFilter): Promise<DeadLetterListing> {
    const info = await this.jsm.streams.info(STREAM, {
      subjects_filter: deadLettersWildcard(filter.accountId),
    });
    const subjects = Object.keys(info.state.subjects ?? {});
    const found: StoredDeadLetter[] = [];
    const malformed: MalformedDeadLetter[] = [];
    for (const subject of subjects) {
      const [, , accountId, traceId] = subject.split('.');
      if (accountId === undefined || traceId === undefined) continue;
      const message = await this.lastMessage(subject);
      if (message === undefined) continue;
      const parsed = DeadLetter.safeParse(parseJsonOrUndefined(message.data));
      if (!parsed.success || !isLetterOf(parsed.data, subject)) {
        malformed.push({ accountId, traceId, seq: message.seq });
        continue;
      }
      const stored: StoredDeadLetter = { letter: parsed.data, seq: message.seq };
      if (filter.workflowId !== undefined && stored.letter.workflow_id !== filter.workflowId) continue;
      found.push(stored);
    }
    found.sort((a, b) => b.letter.dead_at.localeCompare(a.letter.dead_at) || b.seq - a.seq);
    return { letters: found.slice(0, filter.limit), malformed };
  }

  /**
   * Writes `letter` in place of the stored one at `expectedSeq`; undefined when the letter changed (or
   * was dropped) since it was read.
   */
  async replace(letter: DeadLetter, expectedSeq: number): Promise<StoredDeadLetter | undefined> {
    if (expectedSeq < 1) throw new RangeError('a dead letter is replaced from the sequence it was read at');
    try {
      const ack = await this.js.publish(
        deadLetterSubject(letter.account_id, letter.trace_id),
        encodeJson(DeadLetter.parse(letter)),
        { expect: { lastSubjectSequence: expectedSeq } },
      );
      return { letter, seq: ack.seq };
    } catch (error) {
      if (isWrongLastSequence(error)) return undefined;
      throw error;
    }
  }

  /** Drops the task's letter, a malformed one too (it is not read); false when it had none. */
  async remove(accountId: string, traceId: string): Promise<boolean> {
    const stored = await this.lastMessage(deadLetterSubject(accountId, traceId));
    if (stored === undefined) return false;
    try {
      return await this.jsm.streams.deleteMessage(STREAM, stored.seq, false);
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }
}
