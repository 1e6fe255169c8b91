/**
 * Appends a task's events to `mesh.eventlog.<account>.<trace_id>` (stored in MESH_EVENTS, which republishes
 * each stored event onto `mesh.events.<account>.<trace_id>` for followers) with a strictly increasing `seq`.
 *
 * A writer continues from the last event already stored (a redelivered task keeps counting where the
 * crashed attempt stopped), and each publish expects the subject's last stream sequence to be the one
 * this writer saw: if another executor wrote in between, the publish is refused and this writer stops
 * with {@link EventStreamConflictError}. `Nats-Msg-Id` = `<account>.<trace_id>:<seq>:<attempt>` drops a
 * publish the client retried, while two attempts never share an id (so the sequence check, not
 * deduplication, decides between them), nor do two accounts' tasks that use the same trace id.
 *
 * A first attempt ({@link TaskEventWriter.first}) skips the look-up: nothing can have written the task's
 * events before its first delivery, so its first publish expects the subject to be empty — and if it is
 * not (a duplicate of the task), JetStream refuses it like any other conflict.
 *
 * Events are built here from typed data and not parsed again: the types are the contract, and a parse
 * per event was a measurable share of an executor's CPU.
 */
import type { EventType } from '@agentmesh/protocol';
import {
  isTerminalEvent,
  TaskEvent,
  taskEventLogSubject,
  taskKey,
  type EventAgentVersion,
  type EventData,
  type TerminalEvent,
} from '@agentmesh/protocol';
import {
  JetStreamApiCodes,
  PubHeaders,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';
import { EventStreamConflictError } from './errors.js';
import { publishWithRetry } from './jetstream-publish.js';
import { readWhileJetStreamRecovers } from './jetstream-unavailable.js';
import { decodeJson, encodeJson } from './json.js';
import { getLastStoredEvent } from './stored-message.js';
import { isJetStreamApiError } from './jetstream-api-error.js';

export interface TaskEventWriterOptions {
  accountId: string;
  traceId: string;
  /** The delivery attempt writing (JetStream's delivery count). */
  attempt: number;
  /** Adds trace context (and anything else) to each message's headers. */
  headers?: () => MsgHdrs;
  now?: () => Date;
  /** The agent version the task runs: written on the task's first event (seq 1) only. */
  agent?: EventAgentVersion;
}

export class TaskEventWriter {
  private constructor(
    private readonly js: JetStreamClient,
    private readonly options: TaskEventWriterOptions,
    private readonly subject: string,
    private lastStreamSeq: number,
    private lastEventSeq: number,
    private lastTerminal: TerminalEvent | undefined,
  ) {}

  static async open(
    js: JetStreamClient,
    jsm: JetStreamManager,
    options: TaskEventWriterOptions,
  ): Promise<TaskEventWriter> {
    const subject = taskEventLogSubject(options.accountId, options.traceId);
    // A stream leader being elected answers "temporarily unavailable" for seconds: waited out here, so a
    // delivery is not spent before its attempt did anything.
    const last = await readWhileJetStreamRecovers(() => getLastStoredEvent(jsm, subject));
    if (!last) return new TaskEventWriter(js, options, subject, 0, 0, undefined);
    const event = decodeJson(TaskEvent, last.data, `${subject}#${last.seq}`);
    return new TaskEventWriter(
      js,
      options,
      subject,
      last.seq,
      event.seq,
      isTerminalEvent(event) ? event : undefined,
    );
  }

  /**
   * A writer for the first attempt at a task, which starts from "no event yet" without asking the
   * stream (see the module header).
   */
  static first(js: JetStreamClient, options: TaskEventWriterOptions): TaskEventWriter {
    return new TaskEventWriter(
      js,
      options,
      taskEventLogSubject(options.accountId, options.traceId),
      0,
      0,
      undefined,
    );
  }

  /**
   * This writer's position (the task's last event and its stream sequence) for another attempt number:
   * for an attempt that found, in the task's events, that its delivery count was already used.
   */
  asAttempt(attempt: number): TaskEventWriter {
    return new TaskEventWriter(
      this.js,
      { ...this.options, attempt },
      this.subject,
      this.lastStreamSeq,
      this.lastEventSeq,
      this.lastTerminal,
    );
  }

  /** Seq of the last event of the task (0 when none). */
  get seq(): number {
    return this.lastEventSeq;
  }

  /** The task's terminal event, when one was already written (by this or an earlier attempt). */
  get terminal(): TerminalEvent | undefined {
    return this.lastTerminal;
  }

  async emit<T extends EventType>(type: T, data: EventData<T>): Promise<Extract<TaskEvent, { type: T }>> {
    if (this.lastTerminal) {
      throw new Error(
        `task ${this.options.traceId} already ended with ${this.lastTerminal.type}; nothing may follow`,
      );
    }
    // The type system pairs `type` with its `data`; the union cannot see it through the generic.
    const event = {
      trace_id: this.options.traceId,
      seq: this.lastEventSeq + 1,
      ts: (this.options.now?.() ?? new Date()).toISOString(),
      attempt: this.options.attempt,
      ...(this.lastEventSeq === 0 && this.options.agent && { agent: this.options.agent }),
      type,
      data,
    } as Extract<TaskEvent, { type: T }>;
    try {
      const headers = this.options.headers?.() ?? natsHeaders();
      // Set by hand: the client leaves the expectation out when it is 0 ("no event yet"), which is
      // exactly the case two fresh writers race on.
      headers.set(PubHeaders.ExpectedLastSubjectSequenceHdr, String(this.lastStreamSeq));
      // A try that got no answer is sent again with the same id (publishWithRetry).
      const { ack, retried } = await publishWithRetry(this.js, this.subject, encodeJson(event), {
        msgID: `${taskKey(this.options.accountId, event.trace_id)}:${event.seq}:${event.attempt}`,
        headers,
      });
      // After a try that got no answer, a duplicate is that try's event, stored after all (the stream
      // checks duplicates before the expected sequence). Otherwise this writer never publishes an id
      // twice, so a duplicate is another writer's event with this seq and attempt: a copy of the same
      // delivery writing alongside.
      if (ack.duplicate && !retried) throw new EventStreamConflictError(this.options.traceId);
      this.lastStreamSeq = ack.seq;
    } catch (error) {
      if (isJetStreamApiError(error, JetStreamApiCodes.StreamWrongLastSequence)) {
        throw new EventStreamConflictError(this.options.traceId, { cause: error });
      }
      throw error;
    }
    this.lastEventSeq = event.seq;
    if (isTerminalEvent(event)) this.lastTerminal = event;
    return event;
  }
}
