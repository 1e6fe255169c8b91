/**
 * Following every event of every run of one thread over NATS: the thread (its creation time and runs) is
 * read through the gateway's threads API (`mesh.gateway.threads.<account>`, request/reply), and a
 * JetStream ordered push consumer on the account's stored events (`mesh.eventlog.<account>.*`) delivers from the
 * thread's creation — or after the MESH_EVENTS sequence a caller saw last (`afterId`, resume) — passing the
 * events of the thread's runs. A run is listed in the thread before its task is published, so an event of
 * a trace the follower does not know makes it ask the thread again once. Live until the signal aborts.
 */
import {
  accountEventLogWildcard,
  ErrorBody,
  Streams,
  TaskEvent,
  threadApiSubject,
  ThreadReply,
} from '@agentmesh/protocol';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { MeshApiError, MeshProtocolError, MeshUnreachableError } from './errors.js';

export interface NatsThreadEventsOptions {
  /** Resume after this MESH_EVENTS sequence (the `id` of the last event seen). */
  afterId?: number;
  signal?: AbortSignal;
  /** How long a threads API request may take. Default 10 s. */
  requestTimeoutMs?: number;
}

export async function* followThreadEventsOverNats(
  nc: NatsConnection,
  thread: { accountId: string; threadId: string },
  options: NatsThreadEventsOptions = {},
): AsyncGenerator<{ id: number; event: TaskEvent }, void, undefined> {
  const { signal } = options;
  signal?.throwIfAborted();
  const read = async (): Promise<ThreadReply> => {
    const reply = await nc.request(
      threadApiSubject(thread.accountId),
      JSON.stringify({ op: 'get', thread_id: thread.threadId }),
      { timeout: options.requestTimeoutMs ?? 10_000 },
    );
    const body = reply.json<unknown>();
    const parsed = ThreadReply.safeParse(body);
    if (parsed.success) return parsed.data;
    // The gateway's refusal (NOT_FOUND for a thread of another account or none) is an ErrorBody.
    const refusal = ErrorBody.safeParse(body);
    if (refusal.success) throw new MeshApiError(0, refusal.data);
    throw MeshProtocolError.fromZod(`thread ${thread.threadId}`, parsed.error);
  };
  const first = await read();
  const members = new Set(first.runs);
  const strangers = new Set<string>();
  const js = jetstream(nc);
  const inboxPrefix = (nc as { options?: { inboxPrefix?: unknown } }).options?.inboxPrefix;
  let consumer;
  let messages;
  try {
    consumer = await js.consumers.getPushConsumer(Streams.EVENTS.name, {
      filter_subjects: accountEventLogWildcard(thread.accountId),
      ...(options.afterId === undefined
        ? { deliver_policy: DeliverPolicy.StartTime, opt_start_time: first.created_at }
        : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: options.afterId + 1 }),
      deliver_prefix: createInbox(typeof inboxPrefix === 'string' ? inboxPrefix : undefined),
    });
    messages = await consumer.consume();
  } catch (error) {
    throw new MeshUnreachableError(`cannot read the events of thread ${thread.threadId} from JetStream`, {
      cause: error,
    });
  }
  const stop = (): void => void messages.close();
  signal?.addEventListener('abort', stop, { once: true });
  if (signal?.aborted) stop();
  try {
    for await (const message of messages) {
      const parsed = TaskEvent.safeParse(JSON.parse(new TextDecoder().decode(message.data)));
      if (!parsed.success)
        throw MeshProtocolError.fromZod(`event ${message.subject}#${message.seq}`, parsed.error);
      const traceId = parsed.data.trace_id;
      if (!members.has(traceId)) {
        if (strangers.has(traceId)) continue;
        for (const run of (await read()).runs) members.add(run);
        if (!members.has(traceId)) {
          strangers.add(traceId);
          continue;
        }
      }
      yield { id: message.seq, event: parsed.data };
    }
    signal?.throwIfAborted();
  } finally {
    signal?.removeEventListener('abort', stop);
    void messages.close();
    await consumer.delete().catch(() => undefined);
  }
}
