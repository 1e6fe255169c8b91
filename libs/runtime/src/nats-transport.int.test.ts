import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectWithTurnBatching } from './nats-transport.js';

const run = promisify(execFile);

let nats: NatsServer;

beforeAll(async () => {
  nats = await startNats({ jetstream: false });
});

afterAll(async () => {
  await nats?.stop();
});

const publisherEntry = fileURLToPath(new URL('./__fixtures__/turn-publishes.ts', import.meta.url));

/**
 * Runs the publisher fixture in a process of its own (so the test runner's own writes are not counted):
 * 100 publishes, each from a separate callback of one turn, as the callbacks of one I/O turn of a busy
 * service are. Returns the write system calls it made and the messages that arrived.
 */
async function publishFromSeparateCallbacks(
  transport: 'turn-batching' | 'plain',
): Promise<{ writes: number; received: number }> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', publisherEntry], {
    env: { ...process.env, NATS_URL: nats.url, TRANSPORT: transport },
  });
  return JSON.parse(stdout.trim()) as { writes: number; received: number };
}

describe('turn-batching NATS transport', () => {
  it('when 100 publishes come from separate callbacks of one turn, they leave in a handful of write system calls, and all arrive', async () => {
    const batched = await publishFromSeparateCallbacks('turn-batching');
    const unbatched = await publishFromSeparateCallbacks('plain');
    expect(batched.received).toBe(100);
    expect(unbatched.received).toBe(100);
    // A few more than one: the receiver in the same process may answer a server PING meanwhile.
    expect(batched.writes).toBeLessThanOrEqual(5);
    // The plain transport writes once per callback: what the batching saves.
    expect(unbatched.writes).toBeGreaterThanOrEqual(100);
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
