/**
 * What JetStream holds after a chaos run: every stored event of the account, read raw in stream order
 * (duplicates and gaps included, which a client-side reader might hide), and the messages left in the
 * MESH_TASKS work queue.
 */
import { accountEventLogWildcard, Streams, TaskEvent } from '@agentmesh/protocol';
import { DeliverPolicy, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import type { WorkQueueLeftover } from './ledger/ledger-checks.js';

export interface StoredEvents {
  eventsByTrace: Map<string, TaskEvent[]>;
  malformed: string[];
  total: number;
}

export async function readAccountEvents(js: JetStreamClient, accountId: string): Promise<StoredEvents> {
  const jsm = await js.jetstreamManager();
  const filter = accountEventLogWildcard(accountId);
  const info = await jsm.streams.info(Streams.EVENTS.name, { subjects_filter: filter });
  const expected = Object.values(info.state.subjects ?? {}).reduce((sum, count) => sum + count, 0);
  const result: StoredEvents = { eventsByTrace: new Map(), malformed: [], total: 0 };
  if (expected === 0) return result;

  const consumer = await js.consumers.get(Streams.EVENTS.name, {
    filter_subjects: filter,
    deliver_policy: DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  for await (const message of messages) {
    result.total += 1;
    takeEvent(result, message.subject, message.seq, () => message.json());
    if (message.info.pending === 0) break;
  }
  await messages.close();
  return result;
}

function takeEvent(result: StoredEvents, subject: string, seq: number, json: () => unknown): void {
  const where = `${subject}#${seq}`;
  let raw: unknown;
  try {
    raw = json();
  } catch {
    result.malformed.push(`${where}: not JSON`);
    return;
  }
  const parsed = TaskEvent.safeParse(raw);
  if (!parsed.success) {
    result.malformed.push(`${where}: ${parsed.error.issues[0]?.message ?? 'not a task event'}`);
    return;
  }
  const traceId = subject.split('.').at(-1) ?? '';
  if (parsed.data.trace_id !== traceId) result.malformed.push(`${where}: trace_id ${parsed.data.trace_id}`);
  const events = result.eventsByTrace.get(traceId) ?? [];
  events.push(parsed.data);
  result.eventsByTrace.set(traceId, events);
}

/** Messages MESH_TASKS still holds, with the task each belongs to (from its `Nats-Msg-Id`). */
export async function workQueueLeftovers(jsm: JetStreamManager): Promise<WorkQueueLeftover[]> {
  const info = await jsm.streams.info(Streams.TASKS.name);
  if (info.state.messages === 0) return [];
  const leftovers: WorkQueueLeftover[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const stored = await jsm.streams.getMessage(Streams.TASKS.name, { seq }).catch(() => null);
    if (!stored) continue;
    const msgId = stored.header?.get('Nats-Msg-Id') ?? '';
    const traceId = /[0-9a-f]{32}/.exec(msgId)?.[0];
    leftovers.push({ streamSeq: seq, subject: stored.subject, traceId });
  }
  return leftovers;
}

export async function workQueueDepth(jsm: JetStreamManager): Promise<number> {
  return (await jsm.streams.info(Streams.TASKS.name)).state.messages;
}

/** The consumers of MESH_TASKS and what they still owe (pending deliveries and unacknowledged ones). */
export async function taskConsumers(
  jsm: JetStreamManager,
): Promise<Array<{ name: string; pending: number; ackPending: number; redelivered: number }>> {
  const consumers = [];
  for await (const consumer of jsm.consumers.list(Streams.TASKS.name)) {
    consumers.push({
      name: consumer.name,
      pending: consumer.num_pending,
      ackPending: consumer.num_ack_pending,
      redelivered: consumer.num_redelivered,
    });
  }
  return consumers;
}
