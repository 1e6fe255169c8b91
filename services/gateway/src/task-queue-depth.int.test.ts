import { ensureMeshStreams } from '@agentmesh/bus';
import { Consumers, Streams, taskReceivedSubject } from '@agentmesh/protocol';
import { createLogger } from '@agentmesh/runtime';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { AckPolicy, jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { QueueStage, TaskQueueDepth, type ConsumerInfoSource } from './task-queue-depth.js';

const MAX_AGE_MS = 5_000;

let nats: NatsServer;
let client: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  jsm = await jetstreamManager(client);
  await ensureMeshStreams(jsm, { replicas: 1 });
});
afterAll(async () => {
  await client?.close();
  await nats?.stop();
});

/** The real consumer API, counting the requests made through it. */
function countingConsumers(): ConsumerInfoSource & { requests: string[] } {
  const requests: string[] = [];
  return {
    requests,
    info: (stream, consumer) => {
      requests.push(consumer);
      return jsm.consumers.info(stream, consumer);
    },
  };
}

it('however often the depth is read, each consumer is asked at most once per max age, and a stage without a consumer is left out', async () => {
  const logs: string[] = [];
  let now = 0;
  const consumers = countingConsumers();
  const depth = new TaskQueueDepth({
    consumers,
    maxAgeMs: MAX_AGE_MS,
    log: createLogger({
      service: 'gateway',
      level: 'debug',
      destination: { write: (line) => void logs.push(line) },
    }),
    now: () => now,
  });
  await jsm.consumers.add(Streams.TASKS.name, {
    durable_name: Consumers.ASSEMBLER.durable_name,
    filter_subject: Consumers.ASSEMBLER.filter_subject,
    ack_policy: AckPolicy.Explicit,
  });
  const js = jetstream(client);
  await js.publish(taskReceivedSubject('acme'), '{}');
  await js.publish(taskReceivedSubject('beta'), '{}');

  const reads = await Promise.all([depth.read(), depth.read(), depth.read()]);
  now += MAX_AGE_MS - 1;
  reads.push(await depth.read(), await depth.read());

  for (const read of reads) expect(read).toEqual([{ stage: QueueStage.RECEIVED, pending: 2 }]);
  expect(consumers.requests).toEqual([Consumers.ASSEMBLER.durable_name, Consumers.EXECUTOR.durable_name]);
  // A consumer that does not exist yet is not a failure worth a warning.
  expect(logs.filter((line) => line.includes('could not be read'))).toEqual([]);

  await js.publish(taskReceivedSubject('acme'), '{}');
  now += 1;
  expect(await depth.read()).toEqual([{ stage: QueueStage.RECEIVED, pending: 3 }]);
  expect(consumers.requests).toHaveLength(4);
});

it('when JetStream cannot be asked, the stage is left out and the failure is not retried before the max age', async () => {
  const logs: string[] = [];
  let now = 0;
  let requests = 0;
  const depth = new TaskQueueDepth({
    consumers: {
      info: (stream, consumer) => {
        requests++;
        return jsm.consumers.info(`${stream}_MISSING`, consumer);
      },
    },
    maxAgeMs: MAX_AGE_MS,
    log: createLogger({
      service: 'gateway',
      level: 'debug',
      destination: { write: (line) => void logs.push(line) },
    }),
    now: () => now,
  });

  expect(await depth.read()).toEqual([]);
  expect(await depth.read()).toEqual([]);
  expect(requests).toBe(2);
  expect(logs.filter((line) => line.includes('task queue depth could not be read'))).toHaveLength(2);
  now += MAX_AGE_MS;
  await depth.read();
  expect(requests).toBe(4);
});
