/**
 * Every event of every run of one thread, in the order MESH_EVENTS stored them: an ordered consumer on
 * the account's stored events (`mesh.eventlog.<account>.*`) from the thread's creation (or after a stream sequence
 * a client saw last), passing the events of the thread's runs (its record's `runs`, where a run is listed
 * before its task is published, so an unknown trace is looked up once and then known). The stream sequence
 * is the position a follower resumes from (SSE `id:`/`Last-Event-ID`).
 */
import { accountEventLogWildcard, Streams, TaskEvent } from '@agentmesh/protocol';
import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import { decodeJson } from './json.js';

const FOLLOW_PULL_EXPIRES_MS = 5_000;

export interface FollowThreadEventsOptions {
  accountId: string;
  /** The thread's runs now (read again when an event of an unknown trace arrives). */
  runs: () => Promise<readonly string[] | undefined>;
  /** Resume after this MESH_EVENTS sequence; else start at `since`. */
  afterStreamSeq?: number;
  /** Where to start without `afterStreamSeq`: the thread's creation. */
  since: Date;
  signal?: AbortSignal;
}

export interface ThreadEventAt {
  /** MESH_EVENTS sequence: resume after it. */
  streamSeq: number;
  event: TaskEvent;
}

export async function* followThreadEvents(
  js: JetStreamClient,
  { accountId, runs, afterStreamSeq, since, signal }: FollowThreadEventsOptions,
): AsyncGenerator<ThreadEventAt> {
  if (signal?.aborted) return;
  const members = new Set(await runs());
  const strangers = new Set<string>();
  const consumer = await js.consumers.get(Streams.EVENTS.name, {
    filter_subjects: accountEventLogWildcard(accountId),
    ...(afterStreamSeq === undefined
      ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: since.toISOString() }
      : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: afterStreamSeq + 1 }),
  });
  const messages = await consumer.consume({ expires: FOLLOW_PULL_EXPIRES_MS });
  const stop = (): void => void messages.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const message of messages) {
      const event = decodeJson(TaskEvent, message.data, `${message.subject}#${message.seq}`);
      const traceId = event.trace_id;
      if (!members.has(traceId)) {
        if (strangers.has(traceId)) continue;
        const now = await runs();
        if (now === undefined) return; // the thread was deleted
        for (const run of now) members.add(run);
        if (!members.has(traceId)) {
          strangers.add(traceId);
          continue;
        }
      }
      yield { streamSeq: message.seq, event };
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    void messages.close();
  }
}
