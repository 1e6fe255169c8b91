import { ensureMeshStreams } from '@agentmesh/bus';
import { newTraceId, taskAssembledSubject } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AttemptDisposition } from './task-runner.js';
import { ensureExecutorConsumer, TaskConsumer } from './task-consumer.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const vaultKeys = generateVaultKeyPair('consumer-1');

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  const settings = { ackWaitMs: 30_000, maxDeliver: 3, maxAckPending: 100 };
  await ensureExecutorConsumer(jsm, settings);
  await ensureExecutorConsumer(jsm, settings, ['RecallActionsTool']);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** Publishes an assembled task of ACCOUNT asking `userMessage`, sealed for this file's executor key. */
async function publishTask(userMessage: string): Promise<void> {
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: ACCOUNT,
    modelBaseUrl: 'http://127.0.0.1:9/v1',
    secrets: {},
    sealFor: vaultKeys,
    userMessage,
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task));
}

describe('pulling from several consumers', () => {
  it('when one consumer is idle, a burst on another starts at once on all but one slot instead of waiting for the idle pull to expire', async () => {
    const started: string[] = [];
    const release: Array<() => void> = [];
    const consumer = TaskConsumer.start(
      js,
      async (task) => {
        started.push(task.task_meta.trace_id);
        await new Promise<void>((resolve) => release.push(resolve));
        return AttemptDisposition.ACK;
      },
      {
        durableNames: ['executor', 'executor-RecallActionsTool'],
        maxConcurrent: 4,
        ackProgressMs: 1_000,
        stopGraceMs: 1_000,
        handBackAll: () => release.splice(0).forEach((resolve) => resolve()),
        // Longer than the test may wait: a slot held by the idle pull is held for the whole test.
        pullExpiresMs: 12_000,
        handBackLaterMs: 1_000,
      },
      pino({ level: 'silent' }),
    );
    try {
      for (let index = 0; index < 3; index++) await publishTask(`task ${index}`);
      // With a fair share of 2 slots per pull, the idle consumer's open pull held 2 of the 4 and only 2 of
      // the 3 tasks ran until it expired.
      await waitFor(() => started.length === 3, { timeoutMs: 8_000, description: 'three tasks running' });
      expect(new Set(started).size).toBe(3);
    } finally {
      release.splice(0).forEach((resolve) => resolve());
      await consumer.stop();
    }
  });
});

describe('an attempt that fails', () => {
  it('when attempts of a task keep failing, each is handed back asking for twice the delay of the one before', async () => {
    // What the consumer asks of the server: each nak is published on the message's ack subject.
    const naks: string[] = [];
    const acks = nc.subscribe('$JS.ACK.MESH_TASKS.executor.>', {
      callback: (_error, message) => {
        if (message.string().startsWith('-NAK')) naks.push(message.string());
      },
    });
    await nc.flush();
    let deliveries = 0;
    const consumer = TaskConsumer.start(
      js,
      async () => {
        deliveries += 1;
        if (deliveries < 4) throw new Error('JetStream system temporarily unavailable');
        return AttemptDisposition.ACK;
      },
      {
        durableNames: ['executor'],
        maxConcurrent: 4,
        ackProgressMs: 1_000,
        stopGraceMs: 1_000,
        handBackAll: () => undefined,
        pullExpiresMs: 1_000,
        handBackLaterMs: 1_000,
        retryDelayMs: 200,
      },
      pino({ level: 'silent' }),
    );
    try {
      await publishTask('failing task');
      await waitFor(() => deliveries === 4, { timeoutMs: 15_000, description: 'four deliveries' });
      await nc.flush();
      // 200, then 400, then 800 ms, in nanoseconds as JetStream takes them.
      expect(naks.map((nak) => JSON.parse(nak.slice('-NAK'.length)) as unknown)).toEqual([
        { delay: 200_000_000 },
        { delay: 400_000_000 },
        { delay: 800_000_000 },
      ]);
    } finally {
      acks.unsubscribe();
      await consumer.stop();
    }
  });
});

describe('a task waiting for its sub-task', () => {
  const consumerOptions = {
    durableNames: ['executor'],
    maxConcurrent: 1,
    ackProgressMs: 1_000,
    stopGraceMs: 1_000,
    pullExpiresMs: 1_000,
    handBackLaterMs: 1_000,
  };

  function userMessageOf(task: { input: { messages: readonly { content?: unknown }[] } }): string {
    return String(task.input.messages.at(-1)?.content);
  }

  it('on an executor with one slot, a parent waiting for its sub-task lends the slot, the sub-task runs in it, and both end', async () => {
    const ended: string[] = [];
    let subtaskRan!: () => void;
    const subtaskEnded = new Promise<void>((resolve) => (subtaskRan = resolve));
    let lentWhileSubtaskRan = -1;
    const consumer: TaskConsumer = TaskConsumer.start(
      js,
      async (task, delivery) => {
        if (userMessageOf(task) === 'parent') {
          await delivery.slot!.whileWaiting(() => subtaskEnded);
        } else {
          lentWhileSubtaskRan = consumer.lent;
          subtaskRan();
        }
        ended.push(userMessageOf(task));
        return AttemptDisposition.ACK;
      },
      { ...consumerOptions, maxWaiting: 1, handBackAll: () => subtaskRan() },
      pino({ level: 'silent' }),
    );
    try {
      await publishTask('parent');
      await publishTask('sub-task');
      await waitFor(() => ended.length === 2, { timeoutMs: 10_000, description: 'both tasks ended' });
      expect(ended).toEqual(['sub-task', 'parent']);
      expect(lentWhileSubtaskRan).toBe(1);
      expect(consumer.lent).toBe(0);
    } finally {
      await consumer.stop();
    }
  });

  it('with no slot to lend (MAX_WAITING_TASKS 0), the parent keeps its slot: no pull is open and the sub-task waits in the queue until the parent ends', async () => {
    const started: string[] = [];
    let releaseParent!: () => void;
    const parentReleased = new Promise<void>((resolve) => (releaseParent = resolve));
    const consumer = TaskConsumer.start(
      js,
      async (task, delivery) => {
        started.push(userMessageOf(task));
        if (userMessageOf(task) === 'parent') await delivery.slot!.whileWaiting(() => parentReleased);
        return AttemptDisposition.ACK;
      },
      { ...consumerOptions, maxWaiting: 0, handBackAll: () => releaseParent() },
      pino({ level: 'silent' }),
    );
    try {
      const jsm = await jetstreamManager(nc);
      await publishTask('parent');
      await waitFor(() => started.length === 1, { timeoutMs: 10_000, description: 'the parent running' });
      await publishTask('sub-task');
      // Nothing can deliver the sub-task: it is pending, and this executor has no pull open for it.
      await waitFor(
        async () => {
          const info = await jsm.consumers.info('MESH_TASKS', 'executor');
          return info.num_pending === 1 && info.num_waiting === 0 && info.num_ack_pending === 1;
        },
        { timeoutMs: 10_000, description: 'the sub-task pending with no pull open' },
      );
      expect(started).toEqual(['parent']);
      releaseParent();
      await waitFor(() => started.length === 2, { timeoutMs: 10_000, description: 'the sub-task running' });
      expect(started).toEqual(['parent', 'sub-task']);
    } finally {
      releaseParent();
      await consumer.stop();
    }
  });
});
