/**
 * Publishes 100 messages over NATS, each from its own callback of one event-loop turn, and prints the
 * write system calls this process made meanwhile (/proc/self/io). Run as a process of its own, so no
 * test runner's writes are counted. NATS_URL says where; TRANSPORT is `turn-batching` or `plain`.
 */
import { readFileSync } from 'node:fs';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { connectWithTurnBatching } from '../nats-transport.js';

const COUNT = 100;
const servers = process.env.NATS_URL;
const transport = process.env.TRANSPORT;
if (servers === undefined || (transport !== 'turn-batching' && transport !== 'plain'))
  throw new Error('set NATS_URL, and TRANSPORT to turn-batching or plain');

function writeSyscalls(): number {
  const line = readFileSync('/proc/self/io', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('syscw:'));
  if (line === undefined) throw new Error('/proc/self/io has no syscw line');
  return Number(line.slice('syscw:'.length));
}

const receiver = await connect({ servers });
const publisher: NatsConnection =
  transport === 'plain' ? await connect({ servers }) : await connectWithTurnBatching({ servers });
let received = 0;
const all = new Promise<void>((resolve) => {
  receiver.subscribe('turn.test', {
    callback: () => {
      if (++received === COUNT) resolve();
    },
  });
});
await receiver.flush();
await publisher.flush();

const before = writeSyscalls();
await Promise.all(
  Array.from({ length: COUNT }, (_, i) =>
    Promise.resolve()
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        publisher.publish('turn.test', `message ${i}`);
      }),
  ),
);
await all;
const writes = writeSyscalls() - before;

await publisher.close();
await receiver.close();
process.stdout.write(`${JSON.stringify({ writes, received })}\n`);
