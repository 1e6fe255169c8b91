/**
 * Followers on core NATS, on a real server with infra/nats/accounts.conf's users: a tenant subscribed to
 * its task's `mesh.events.<account>.<trace_id>` before the task starts (the recipe `npm start` prints)
 * sees exactly the events MESH_EVENTS stored, in order, once — never a publish JetStream refused (a stale
 * attempt fenced off) nor a retried publish it dropped as a duplicate. And the grants that make it so:
 * nobody publishes onto the followed subjects (only the stream's republish does), only the event writers
 * publish to the stored ones, and a tenant may not subscribe to those.
 */
import { EventType, Streams, taskEventsSubject, taskKey, type TaskEvent } from '@agentmesh/protocol';
import {
  connectAsInfraUser,
  generateInfraPasswords,
  INFRA_EXAMPLE_ACCOUNT,
  INFRA_NATS_DIR,
  INFRA_NATS_USERS,
  infraInboxPrefix,
  infraPasswordEnvironment,
  startNats,
  waitFor,
  type InfraClient,
  type InfraNatsUser,
  type NatsServer,
} from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { PermissionViolationError } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventStreamConflictError } from './errors.js';
import { encodeJson } from './json.js';
import { provisionMeshResources } from './resources.js';
import { readTaskEventLog } from './task-event-log.js';
import { TaskEventWriter } from './task-event-writer.js';

const ACCOUNT = INFRA_EXAMPLE_ACCOUNT;
const passwords = generateInfraPasswords();
const clients: InfraClient[] = [];
let server: NatsServer;
let traceCounter = 0;
const nextTrace = (): string => (++traceCounter).toString(16).padStart(32, 'f');

beforeAll(async () => {
  server = await startNats({
    name: 'event-followers',
    config: { dir: INFRA_NATS_DIR, file: 'accounts.conf', environment: infraPasswordEnvironment(passwords) },
    client: {
      user: 'provisioner',
      pass: passwords.provisioner,
      inboxPrefix: infraInboxPrefix('provisioner'),
    },
  });
  await provisionMeshResources(jetstream((await connectAs('provisioner')).nc));
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(clients.map(({ nc }) => nc.close()));
  await server?.stop();
});

async function connectAs(user: InfraNatsUser): Promise<InfraClient> {
  const client = await connectAsInfraUser(server.url, user, passwords[user]);
  clients.push(client);
  return client;
}

function violation(
  client: InfraClient,
  operation: 'publish' | 'subscription',
  subject: string,
): Promise<PermissionViolationError> {
  return waitFor(
    () => client.violations.find((error) => error.operation === operation && error.subject === subject),
    { description: `a ${operation} permission violation on ${subject}` },
  );
}

const done = {
  message: 'booked',
  steps: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  duration_ms: 5,
};

describe('following a task on core NATS as a tenant', () => {
  it('when a stale attempt writes after a newer one took over and a publish is retried, the tenant subscribed first sees exactly the stored events, in order, once', async () => {
    const traceId = nextTrace();
    const tenant = await connectAs('tenant-acme');
    const seen: TaskEvent[] = [];
    const following = (async () => {
      const subscription = tenant.nc.subscribe(taskEventsSubject(ACCOUNT, traceId));
      await tenant.nc.flush();
      return {
        ended: (async () => {
          for await (const message of subscription) {
            seen.push(message.json<TaskEvent>());
            if (seen.at(-1)!.type === EventType.DONE) break;
          }
        })(),
      };
    })();
    const { ended } = await following;

    // Two executors: attempt 1 starts the task, freezes, and attempt 2 takes over from the log.
    const frozen = await connectAs('executor');
    const takingOver = await connectAs('executor');
    const jsmOf = (client: InfraClient) => jetstreamManager(client.nc);
    const attempt1 = await TaskEventWriter.open(jetstream(frozen.nc), await jsmOf(frozen), {
      accountId: ACCOUNT,
      traceId,
      attempt: 1,
    });
    await attempt1.emit('tool_start', { call_id: 'call_1', tool: 'book', arguments: {} });
    const attempt2 = await TaskEventWriter.open(jetstream(takingOver.nc), await jsmOf(takingOver), {
      accountId: ACCOUNT,
      traceId,
      attempt: 2,
    });
    const started = await attempt2.emit('attempt_started', {
      drop_text_after_seq: 1,
      resumed_steps: 0,
      resumed_tool_results: 0,
      rerun_call_ids: ['call_1'],
    });
    // The frozen attempt wakes and writes on: JetStream refuses it (expected last subject sequence).
    await expect(attempt1.emit('message_chunk', { delta: 'zombie text' })).rejects.toBeInstanceOf(
      EventStreamConflictError,
    );
    // A publish of attempt 2 retried after an unanswered try (the same message, to the subject it was
    // stored on): JetStream drops it as a duplicate.
    const takeoverJsm = await jsmOf(takingOver);
    const last = await takeoverJsm.streams.getMessage(Streams.EVENTS.name, {
      seq: (await takeoverJsm.streams.info(Streams.EVENTS.name)).state.last_seq,
    });
    expect(last?.json<TaskEvent>()).toEqual(started);
    const retried = await jetstream(takingOver.nc).publish(last!.subject, encodeJson(started), {
      msgID: `${taskKey(ACCOUNT, traceId)}:${started.seq}:2`,
    });
    expect(retried.duplicate).toBe(true);
    await attempt2.emit('message_chunk', { delta: 'booked' });
    await attempt2.emit('done', done);
    await ended;
    // Anything republished after the terminal event would be a repeat: one round trip lets it arrive.
    await tenant.nc.flush();

    const stored = await readTaskEventLog(await jsmOf(takingOver), {
      accountId: ACCOUNT,
      traceId,
      throughSeq: Number.MAX_SAFE_INTEGER,
    });
    expect(stored.map((event) => [event.seq, event.attempt, event.type])).toEqual([
      [1, 1, 'tool_start'],
      [2, 2, 'attempt_started'],
      [3, 2, 'message_chunk'],
      [4, 2, 'done'],
    ]);
    expect(seen).toEqual(stored);
    expect(tenant.violations).toEqual([]);
  });

  it('when the tenant subscribes to the subjects events are published and stored on, the server refuses it', async () => {
    const tenant = await connectAs('tenant-acme');
    const stored = `mesh.eventlog.${ACCOUNT}.>`;
    const subscription = tenant.nc.subscribe(stored);

    expect(await subscription.closed).toMatchObject({ operation: 'subscription', subject: stored });
  });

  it('when anyone publishes onto a followed subject, the server refuses it: only the stream republishes there', async () => {
    const subject = taskEventsSubject(ACCOUNT, nextTrace());
    for (const user of INFRA_NATS_USERS) {
      const client = await connectAs(user);
      client.nc.publish(subject, '{"type":"done"}');
      await expect(violation(client, 'publish', subject)).resolves.toBeInstanceOf(PermissionViolationError);
    }
  });

  it('when anyone but the event writers publishes onto a stored subject, the server refuses it', async () => {
    const subject = taskEventsSubjectStored(nextTrace());
    const others = INFRA_NATS_USERS.filter((user) => user !== 'executor' && user !== 'assembler');
    expect(others).toContain('tenant-acme');
    expect(others).toContain('upstream-acme');
    for (const user of others) {
      const client = await connectAs(user);
      client.nc.publish(subject, '{"type":"done"}');
      await expect(violation(client, 'publish', subject)).resolves.toBeInstanceOf(PermissionViolationError);
    }
  });
});

/** The subject a task's events are published and stored on (spelt out: it is what the grants name). */
function taskEventsSubjectStored(traceId: string): string {
  return `mesh.eventlog.${ACCOUNT}.${traceId}`;
}
