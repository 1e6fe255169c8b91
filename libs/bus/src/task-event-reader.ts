/**
 * Reads a task's events from JetStream in order: everything already stored, then live ones as they
 * arrive, ending after the terminal event. Used by the gateway's SSE stream and by NATS clients that
 * want replay (`afterSeq` resumes after a given event, as `Last-Event-ID` does).
 */
import { isTerminalEvent, Streams, TaskEvent, taskEventsSubject } from '@agentmesh/protocol';
import { DeliverPolicy, type JetStreamClient } from '@nats-io/jetstream';
import { decodeJson } from './json.js';

/**
 * How long one pull waits for events. nats.js also paces its recovery by it: after a reconnect to a
 * server whose JetStream is still starting, it checks the consumer again only after this long, and it
 * notices a lost pull after two missed heartbeats (half of this each). Its default (30 s) left a live
 * follower frozen for ~40 s after a NATS restart; 5 s costs one pull request per follower every 5 s.
 */
const FOLLOW_PULL_EXPIRES_MS = 5_000;

export interface FollowTaskEventsOptions {
  accountId: string;
  traceId: string;
  /** Only events with a greater seq are yielded. */
  afterSeq?: number;
  /** Stops following (the iteration ends without error). */
  signal?: AbortSignal;
}

export async function* followTaskEvents(
  js: JetStreamClient,
  { accountId, traceId, afterSeq = 0, signal }: FollowTaskEventsOptions,
): AsyncGenerator<TaskEvent> {
  const subject = taskEventsSubject(accountId, traceId);
  if (signal?.aborted) return;
  const consumer = await js.consumers.get(Streams.EVENTS.name, {
    filter_subjects: subject,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume({ expires: FOLLOW_PULL_EXPIRES_MS });
  const stop = (): void => void messages.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const message of messages) {
      const event = decodeJson(TaskEvent, message.data, `${subject}#${message.seq}`);
      if (event.seq > afterSeq) yield event;
      if (isTerminalEvent(event)) return;
    }
  } finally {
    signal?.removeEventListener('abort', stop);
    // Not awaited: closing waits for the pending pull when nobody iterates any more. The server-side
    // consumer is deleted too, or it would linger until its inactivity threshold (minutes).
    void messages.close().then(() => consumer.delete().catch(() => undefined));
  }
}
