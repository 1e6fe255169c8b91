/**
 * The received-task consumer's hold on a task on real NATS: a short ack_wait (so a dead assembler's
 * task is taken over quickly) that a live, slow assembly keeps with in-progress acks.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeJson, ensureMeshStreams, openMeshBuckets, TaskStatusStore } from '@agentmesh/bus';
import { Consumers, taskEventLogSubject, taskReceivedSubject, TaskEvent, Streams } from '@agentmesh/protocol';
import { createLogger } from '@agentmesh/runtime';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receivedTask } from './__fixtures__/assembly.js';
import { AssembledTaskPublisher } from './assembled-task-publisher.js';
import { AssemblerMetrics } from './assembler-metrics.js';
import { ensureAssemblerConsumer, ReceivedTaskConsumer } from './received-task-consumer.js';
import { TaskFailureRecorder } from './task-failure-recorder.js';

const ACK_WAIT_MS = 1_000;
const ACK_PROGRESS_MS = 200;

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
});

afterAll(async () => {
  await nc?.drain();
  await nats?.stop();
});

describe('the received-task consumer', () => {
  it('an assembly running longer than three ack_waits is never handed to another delivery while its assembler lives, and the consumer of an older deployment is brought to the configured ack_wait', async () => {
    // As an older deployment left it: a 30 s ack_wait fixed in code.
    await ensureAssemblerConsumer(jsm, { ackWaitMs: 30_000 });
    const statuses = new TaskStatusStore((await openMeshBuckets(js)).tasks);
    let lookups = 0;
    const consumer = await ReceivedTaskConsumer.start({
      js,
      jsm,
      log: createLogger({ service: 'assembler', level: 'silent' }),
      statuses,
      cancels: { check: () => ({ state: 'none' }) },
      sources: {
        // A registry read that hangs (a KV read across a reconnect): the agent is not found in the end.
        agents: {
          resolve: async () => {
            lookups++;
            await sleep(ACK_WAIT_MS * 3.5);
            return undefined;
          },
        },
        tools: { resolve: async () => undefined },
        credentials: { resolve: async () => ({ values: {}, missing: [] }) },
        sealFor: { kid: 'exec-1', publicKey: generateVaultKeyPair('exec-1').publicKey },
      },
      publisher: new AssembledTaskPublisher(js),
      nativeProviders: { unprovided: () => [] },
      failures: new TaskFailureRecorder(js, jsm, statuses),
      concurrency: 4,
      ackWaitMs: ACK_WAIT_MS,
      ackProgressMs: ACK_PROGRESS_MS,
      metrics: new AssemblerMetrics(),
    });
    try {
      const { stream, durable_name } = Consumers.ASSEMBLER;
      const before = await jsm.consumers.info(stream, durable_name);
      expect(before.config.ack_wait).toBe(ACK_WAIT_MS * 1_000_000);

      const task = receivedTask('slow_agent');
      await js.publish(taskReceivedSubject(task.task_meta.account_id), encodeJson(task), {
        msgID: task.task_meta.trace_id,
      });
      const subject = taskEventLogSubject(task.task_meta.account_id, task.task_meta.trace_id);
      const terminal = await waitFor(
        async () => {
          const stored = await jsm.streams
            .getMessage(Streams.EVENTS.name, { last_by_subj: subject })
            .catch(() => null);
          return stored ? TaskEvent.parse(stored.json()) : undefined;
        },
        { timeoutMs: 20_000, description: 'the task to end' },
      );
      await waitFor(async () => (await jsm.consumers.info(stream, durable_name)).num_ack_pending === 0, {
        timeoutMs: 10_000,
        description: 'the received task to be acked',
      });

      expect(terminal).toMatchObject({ type: 'error', attempt: 1, data: { code: 'NOT_FOUND' } });
      expect(lookups).toBe(1);
      const after = await jsm.consumers.info(stream, durable_name);
      // One delivery in all: a redelivery would count another.
      expect(after.delivered.consumer_seq - before.delivered.consumer_seq).toBe(1);
    } finally {
      await consumer.stop();
    }
  });
});
