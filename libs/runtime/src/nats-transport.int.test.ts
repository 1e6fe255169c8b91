import { readFileSync } from 'node:fs';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectWithTurnBatching } from './nats-transport.js';

/** Write system calls of this process so far (write and writev alike), from /proc/self/io. */
function writeSyscalls(): number {
  const line = readFileSync('/proc/self/io', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('syscw:'));
  if (line === undefined) throw new Error('/proc/self/io has no syscw line');
  return Number(line.slice('syscw:'.length));
}

let nats: NatsServer;

beforeAll(async () => {
  nats = await startNats({ jetstream: false });
});

afterAll(async () => {
  await nats?.stop();
});

/**
 * Publishes `count` messages, each from its own callback of one event-loop turn (as the callbacks of
 * one I/O turn of a busy service are), waits until all arrived, and returns the write system calls made.
 */
async function publishFromSeparateCallbacks(publisher: NatsConnection, count: number): Promise<number> {
  const receiver = await connect({ servers: nats.url });
  let received = 0;
  const all = new Promise<void>((resolve) => {
    receiver.subscribe('turn.test', {
      callback: () => {
        if (++received === count) resolve();
      },
    });
  });
  await receiver.flush();
  await publisher.flush();
  const before = writeSyscalls();
  await Promise.all(
    Array.from({ length: count }, (_, i) =>
      Promise.resolve()
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => {
          publisher.publish('turn.test', `message ${i}`);
        }),
    ),
  );
  await all;
  const writes = writeSyscalls() - before;
  await receiver.close();
  return writes;
}

describe('turn-batching NATS transport', () => {
  it('when 100 publishes come from separate callbacks of one turn, they leave in a handful of write system calls, and all arrive', async () => {
    const batching = await connectWithTurnBatching({ servers: nats.url });
    const plain = await connect({ servers: nats.url });
    try {
      const batched = await publishFromSeparateCallbacks(batching, 100);
      const unbatched = await publishFromSeparateCallbacks(plain, 100);
      // A few more than one: the receiver's and the test runner's own writes count too.
      expect(batched).toBeLessThanOrEqual(10);
      // The plain transport writes once per callback: what the batching saves.
      expect(unbatched).toBeGreaterThanOrEqual(100);
    } finally {
      await batching.close();
      await plain.close();
    }
  });

  it('what is published just before close still reaches the server', async () => {
    const receiver = await connect({ servers: nats.url });
    const got: string[] = [];
    receiver.subscribe('turn.close', {
      callback: (_error, msg) => {
        got.push(msg.string());
      },
    });
    await receiver.flush();
    const batching = await connectWithTurnBatching({ servers: nats.url });
    for (let i = 0; i < 10; i++) batching.publish('turn.close', `last ${i}`);
    await batching.drain();
    await receiver.flush();
    await receiver.close();
    expect(got).toEqual(Array.from({ length: 10 }, (_, i) => `last ${i}`));
  });
});
