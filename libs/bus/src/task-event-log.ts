/**
 * Reads a task's stored events once, in order, for an executor that resumes a redelivered task from its
 * own event log. Message gets by subject (`next_by_subj`), one per event: a redelivery is rare and a task
 * holds tens of events, and a get needs no consumer (nothing to create, clean up or grant beyond the
 * `STREAM.MSG.GET` the writer already uses to find the last event).
 */
import { Streams, TaskEvent, taskEventLogSubject } from '@agentmesh/protocol';
import { type JetStreamManager, type MsgRequest, type NextMsgRequest } from '@nats-io/jetstream';
import { decodeJson } from './json.js';
import { getLastStoredEvent } from './stored-message.js';

export interface ReadTaskEventLogOptions {
  accountId: string;
  traceId: string;
  /**
   * The last event to read (its `seq`): the one the attempt's writer continues after. Events written
   * after it belong to another attempt still writing, which the writer's fence turns away anyway.
   */
  throughSeq: number;
}

/** The task's stored events with `seq` up to `throughSeq`, in order; empty when none is stored. */
export async function readTaskEventLog(
  jsm: JetStreamManager,
  { accountId, traceId, throughSeq }: ReadTaskEventLogOptions,
): Promise<TaskEvent[]> {
  const subject = taskEventLogSubject(accountId, traceId);
  const events: TaskEvent[] = [];
  let streamSeq = 1;
  while (events.length === 0 || events.at(-1)!.seq < throughSeq) {
    const next: NextMsgRequest = { seq: streamSeq, next_by_subj: subject };
    // The server's STREAM.MSG.GET takes `next_by_subj` (nats.js types it for direct gets only, and passes
    // the request on as it is); "no message" comes back as null.
    const message = await jsm.streams.getMessage(Streams.EVENTS.name, next as unknown as MsgRequest);
    if (!message) break;
    const event = decodeJson(TaskEvent, message.data, `${subject}#${message.seq}`);
    if (event.seq > throughSeq) break;
    events.push(event);
    streamSeq = message.seq + 1;
  }
  return events;
}

/**
 * The task's last stored event (one message get, `last_by_subj`), or undefined when none is stored: a
 * finished task's terminal event, for a task that followed it through its status record (an executor
 * waiting for a sub-task).
 */
export async function readLastTaskEvent(
  jsm: JetStreamManager,
  { accountId, traceId }: { accountId: string; traceId: string },
): Promise<TaskEvent | undefined> {
  const subject = taskEventLogSubject(accountId, traceId);
  const last = await getLastStoredEvent(jsm, subject);
  return last ? decodeJson(TaskEvent, last.data, `${subject}#${last.seq}`) : undefined;
}
