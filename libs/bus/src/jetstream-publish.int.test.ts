/**
 * Publishes across an outage on real NATS: the server is frozen (docker pause / SIGSTOP) so a try gets no
 * answer although its bytes reach the server's socket, and thawed once the publisher has tried again.
 * Its own server, since freezing it would stall every other test.
 */
import { EventType, Streams, taskEventLogSubject, type TaskEvent } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import {
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PublishUnconfirmedError } from './errors.js';
import { publishWithRetry } from './jetstream-publish.js';
import { encodeJson } from './json.js';
import { ensureMeshStreams } from './resources.js';
import { TaskEventWriter } from './task-event-writer.js';

/** Short, so a frozen server costs a test half a second per try. */
const PUBLISH_TIMEOUT_MS = 500;

let nats: NatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
let paused = false;
let traceCounter = 0;
const nextTrace = (): string => (++traceCounter).toString(16).padStart(32, 'c');

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
});

afterEach(async () => {
  if (paused) await thaw();
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

async function freeze(): Promise<void> {
  await nats.pause();
  paused = true;
}

async function thaw(): Promise<void> {
  await nats.unpause();
  paused = false;
}

/** The real client, counting the publishes (tries) sent through it. */
function countingTries(): { js: JetStreamClient; tries: () => number } {
  const js = jetstream(nc, { timeout: PUBLISH_TIMEOUT_MS });
  let tries = 0;
  const counting = Object.create(js, {
    publish: {
      value: (...args: Parameters<JetStreamClient['publish']>) => {
        tries++;
        return js.publish(...args);
      },
    },
  }) as JetStreamClient;
  return { js: counting, tries: () => tries };
}

async function storedOn(subject: string): Promise<number> {
  const info = await jsm.streams.info(Streams.EVENTS.name, { subjects_filter: subject });
  return info.state.subjects?.[subject] ?? 0;
}

describe('a JetStream publish across an outage', () => {
  it('when the first try gets no answer because the server is frozen, it is sent again with the same Nats-Msg-Id and the message is stored exactly once', async () => {
    const { js, tries } = countingTries();
    const subject = taskEventLogSubject('acme', nextTrace());
    await freeze();
    const publishing = publishWithRetry(
      js,
      subject,
      encodeJson({ n: 1 }),
      { msgID: `${subject}:1` },
      { attempts: 20, delaysMs: [100] },
    );
    await waitFor(() => tries() >= 2, { timeoutMs: 10_000, description: 'a second try' });
    await thaw();
    const { ack, retried } = await publishing;

    expect(retried).toBe(true);
    // The first try was stored once the server thawed; the later one was its duplicate.
    expect(ack.duplicate).toBe(true);
    expect(await storedOn(subject)).toBe(1);
  });

  it('an event whose publish timed out while the server was frozen is written once, and its writer goes on with the next seq', async () => {
    const { js, tries } = countingTries();
    const traceId = nextTrace();
    const writer = TaskEventWriter.first(js, { accountId: 'acme', traceId, attempt: 1 });
    await freeze();
    const emitting = writer.emit(EventType.MESSAGE_CHUNK, { delta: 'Hel' });
    await waitFor(() => tries() >= 2, { timeoutMs: 10_000, description: 'a second try' });
    await thaw();
    await emitting;
    await writer.emit(EventType.MESSAGE_CHUNK, { delta: 'lo' });

    const subject = taskEventLogSubject('acme', traceId);
    expect(await storedOn(subject)).toBe(2);
    const last = await jsm.streams.getMessage(Streams.EVENTS.name, { last_by_subj: subject });
    expect(last?.json<TaskEvent>()).toMatchObject({ seq: 2, data: { delta: 'lo' } });
  });

  it('a publish the stream refuses is not tried again', async () => {
    const { js, tries } = countingTries();
    const subject = taskEventLogSubject('acme', nextTrace());
    const refused = publishWithRetry(js, subject, encodeJson({ n: 1 }), {
      msgID: `${subject}:1`,
      expect: { lastSubjectSequence: 12345 },
    });

    await expect(refused).rejects.toBeInstanceOf(JetStreamApiError);
    expect(tries()).toBe(1);
    expect(await storedOn(subject)).toBe(0);
  });

  it('when no try is answered, the publish fails with a retryable SERVICE_UNAVAILABLE error after the tries it was given', async () => {
    const { js, tries } = countingTries();
    const subject = taskEventLogSubject('acme', nextTrace());
    await freeze();
    const error = await publishWithRetry(
      js,
      subject,
      encodeJson({ n: 1 }),
      { msgID: `${subject}:1` },
      { attempts: 2, delaysMs: [50] },
    ).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(PublishUnconfirmedError);
    expect(error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true, attempts: 2 });
    expect(tries()).toBe(2);
  });

  it('when no stream listens yet (no responders, as during a leader election), the publish is tried again until one does and is stored once; past its window it fails as unconfirmed', async () => {
    const { js, tries } = countingTries();
    const subject = `election.${nextTrace()}`;
    const stream = `ELECTION_${traceCounter}`;
    let created: Promise<unknown> | undefined;
    // The stream appears only after the first try was answered "no responders".
    const published = publishWithRetry(
      js,
      subject,
      encodeJson({ n: 1 }),
      { msgID: `${subject}:1` },
      {
        attempts: 1,
        delaysMs: [50],
        noRespondersWithinMs: 10_000,
        onRetry: () => void (created ??= jsm.streams.add({ name: stream, subjects: [subject] })),
      },
    );
    const { ack } = await published;
    await created;
    expect(ack.stream).toBe(stream);
    expect(tries()).toBeGreaterThan(1);
    expect((await jsm.streams.info(stream)).state.messages).toBe(1);

    const nobody = `election.${nextTrace()}`;
    const unconfirmed = await publishWithRetry(
      js,
      nobody,
      encodeJson({ n: 1 }),
      { msgID: `${nobody}:1` },
      { attempts: 1, delaysMs: [20], noRespondersWithinMs: 100 },
    ).catch((caught: unknown) => caught);
    expect(unconfirmed).toBeInstanceOf(PublishUnconfirmedError);
    expect((unconfirmed as Error).cause).toMatchObject({ name: 'JetStreamNotEnabled' });
  });
});
