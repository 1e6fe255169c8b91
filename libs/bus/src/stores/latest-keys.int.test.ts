import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listLatestKeys, visitLatestKeys } from './latest-keys.js';

let nats: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

let buckets = 0;
async function freshBucket(): Promise<KV> {
  buckets += 1;
  return new Kvm(jetstream(nc)).create(`latest_keys_${buckets}_${Date.now()}`, { history: 1 });
}

describe('listing the latest keys of a KV bucket', () => {
  it('lists the live keys under the filter in the order of their last writes, without deleted keys or other prefixes', async () => {
    const kv = await freshBucket();
    await kv.put('acme.a', '1');
    await kv.put('acme.b', '1');
    await kv.put('other.c', '1');
    await kv.put('acme.c', '1');
    await kv.put('acme.a', '2');
    await kv.delete('acme.b');

    expect(await listLatestKeys(kv, 'acme.*')).toEqual(['acme.c', 'acme.a']);
    expect(await listLatestKeys(kv, 'other.*')).toEqual(['other.c']);
    expect(await listLatestKeys(kv, 'nobody.*')).toEqual([]);
    expect(await listLatestKeys(kv, '>')).toEqual(['other.c', 'acme.c', 'acme.a']);
  });

  it('when the keys under the filter are all deleted, the listing is empty and ends', async () => {
    const kv = await freshBucket();
    await kv.put('acme.a', '1');
    await kv.delete('acme.a');
    expect(await listLatestKeys(kv, 'acme.*')).toEqual([]);
  });

  it('when every key is rewritten by sixteen writers while it is listed, each of 300 listings has every key (kv.keys() comes back short here)', async () => {
    const kv = await freshBucket();
    const keyCount = 200;
    const expected = Array.from({ length: keyCount }, (_, index) => `acme.k${index}`).sort();
    for (const key of expected) await kv.put(key, '0');

    let writing = true;
    let writes = 0;
    const writers = Array.from({ length: 16 }, async (_, writer) => {
      for (let next = writer; writing; next += 7) {
        await kv.put(`acme.k${next % keyCount}`, String(writes++));
      }
    });
    const short: number[] = [];
    try {
      for (let listing = 0; listing < 300; listing++) {
        const listed = await listLatestKeys(kv, 'acme.*');
        if (listed.length !== keyCount) short.push(keyCount - listed.length);
      }
    } finally {
      writing = false;
      await Promise.all(writers);
    }

    expect(writes).toBeGreaterThan(1_000);
    expect(short).toEqual([]);
  });

  it('a listing leaves no consumer behind, and a caller visiting keys sees each one as it comes', async () => {
    const kv = await freshBucket();
    await kv.put('acme.a', '1');
    await kv.put('acme.b', '1');
    const visited: string[] = [];
    await visitLatestKeys(kv, 'acme.*', (key) => visited.push(key));

    expect(visited).toEqual(['acme.a', 'acme.b']);
    const streamName = `KV_${(await kv.status()).bucket}`;
    expect((await (await jetstreamManager(nc)).streams.info(streamName)).state.consumer_count).toBe(0);
  });
});
