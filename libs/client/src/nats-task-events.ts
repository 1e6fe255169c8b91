/**
 * Following a task's events over NATS without losing any: a JetStream ordered (push) consumer on MESH_EVENTS,
 * filtered on the task's stored subject (`mesh.eventlog.<account>.<trace_id>`; it republishes them onto the
 * followed `mesh.events.<account>.<trace_id>`) and delivering from the task's
 * first stored event. Where a core subscription made after the submit misses what the task published
 * before it (demo tasks end 40 ms after the reply), the consumer replays what is stored and then goes
 * on live, so it may be attached before the submit, right after it, or long after the task finished.
 * Only stored events reach it: a publish JetStream refused (a stale attempt fenced off) or dropped as
 * a duplicate never does. Events are validated against the protocol; seq only grows (an event at or
 * below the last one yielded is skipped); the iteration ends after the terminal event.
 *
 * A push consumer, delivering to the connection's own inbox prefix, rather than nats.js's pull one: its
 * user then needs only consumer create filtered on the task's subject, delete and flow-control replies,
 * never stream info (which would list every account's task subjects) nor pulls by consumer name (which
 * would read any consumer whose name it learnt). See the package README.
 */
import {
  isTerminalEvent,
  parseEventsSubject,
  Streams,
  TaskEvent,
  taskEventLogSubject,
} from '@agentmesh/protocol';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { MeshProtocolError, MeshUnreachableError } from './errors.js';

/** Which task: its events subject (the submit reply's `events_subject`), or its account and trace id. */
export type NatsTaskRef = { eventsSubject: string } | { accountId: string; traceId: string };

export interface NatsTaskEventsOptions {
  /** Only events with a greater seq are yielded (resume). */
  afterSeq?: number;
  /** Stops following: the iteration throws the signal's reason. */
  signal?: AbortSignal;
}

export async function* followTaskEventsOverNats(
  nc: NatsConnection,
  task: NatsTaskRef,
  options: NatsTaskEventsOptions = {},
): AsyncGenerator<TaskEvent, void, undefined> {
  const { subject, traceId } = subjectOf(task);
  const { signal } = options;
  signal?.throwIfAborted();
  let lastSeq = options.afterSeq ?? 0;
  const js = jetstream(nc);
  let consumer;
  let messages;
  try {
    consumer = await js.consumers.getPushConsumer(Streams.EVENTS.name, {
      filter_subjects: subject,
      deliver_policy: DeliverPolicy.All,
      // Under the connection's own inbox prefix (`connect({ inboxPrefix })`): its user may subscribe there.
      deliver_prefix: createInbox(inboxPrefixOf(nc)),
    });
    messages = await consumer.consume();
  } catch (error) {
    throw new MeshUnreachableError(
      `cannot read the events of task ${traceId} from JetStream (${Streams.EVENTS.name})`,
      {
        cause: error,
      },
    );
  }
  const stop = (): void => void messages.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const message of messages) {
      const event = parseEvent(message.data, `${subject}#${message.seq}`);
      if (event.trace_id !== traceId) {
        throw new MeshProtocolError(`event ${subject}#${message.seq} belongs to task ${event.trace_id}`);
      }
      if (event.seq <= lastSeq) continue;
      lastSeq = event.seq;
      yield event;
      if (isTerminalEvent(event)) return;
    }
    signal?.throwIfAborted();
    throw new MeshUnreachableError(
      `the JetStream consumer of task ${traceId} stopped before its terminal event`,
    );
  } finally {
    signal?.removeEventListener('abort', stop);
    void messages.close();
    // The server-side consumer is deleted too, or it would linger until its inactivity threshold; awaited
    // (one round trip), as a caller may close the connection as soon as the iteration ends.
    await consumer.delete().catch(() => undefined);
  }
}

/** nats.js keeps its connect options on the connection; the public type does not show them. */
function inboxPrefixOf(nc: NatsConnection): string | undefined {
  const { options } = nc as { options?: { inboxPrefix?: unknown } };
  return typeof options?.inboxPrefix === 'string' ? options.inboxPrefix : undefined;
}

function subjectOf(task: NatsTaskRef): { subject: string; traceId: string } {
  if ('eventsSubject' in task) {
    const parsed = parseEventsSubject(task.eventsSubject);
    if (parsed === undefined) {
      throw new MeshProtocolError(`${JSON.stringify(task.eventsSubject)} is not a task's events subject`);
    }
    // The stream stores the task's events under its event-log subject and republishes them onto the
    // followed `events_subject`; a consumer filters on what the stream stores.
    return { subject: taskEventLogSubject(parsed.accountId, parsed.traceId), traceId: parsed.traceId };
  }
  return { subject: taskEventLogSubject(task.accountId, task.traceId), traceId: task.traceId };
}

function parseEvent(data: Uint8Array, what: string): TaskEvent {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(data)) as unknown;
  } catch (error) {
    throw new MeshProtocolError(`event ${what} is not JSON`, undefined, { cause: error });
  }
  const parsed = TaskEvent.safeParse(json);
  if (!parsed.success) throw MeshProtocolError.fromZod(`event ${what}`, parsed.error);
  return parsed.data;
}
