import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KvMirror, type KvMirrorOptions, type MirrorEvent } from './kv-mirror.js';
import { faultyKv, startTcpProxy } from './__fixtures__/kv-faults.js';

let nats: NatsServer;
let nc: NatsConnection;
let bucketCount = 0;
const mirrors: KvMirror<unknown>[] = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const mirror of mirrors) mirror.stop();
  await nc?.close();
  await nats?.stop();
});

async function freshBucket(name = `mirror_test_${++bucketCount}`): Promise<KV> {
  return new Kvm(jetstream(nc)).create(name);
}

const text = (_key: string, data: Uint8Array): string => new TextDecoder().decode(data);

async function startMirror(
  options: Partial<KvMirrorOptions<string>> & { kv: KV },
): Promise<{ mirror: KvMirror<string>; events: MirrorEvent[] }> {
  const events: MirrorEvent[] = [];
  const mirror = await KvMirror.start<string>({
    decode: text,
    maxEntries: 100,
    retryDelayMs: { min: 20, max: 200 },
    onEvent: (event) => events.push(event),
    ...options,
  });
  mirrors.push(mirror as KvMirror<unknown>);
  return { mirror, events };
}

describe('KV mirror', () => {
  it('after start, every value stored before is answered from memory and a key never stored is absent, without a read', async () => {
    const kv = await freshBucket();
    await kv.put('a', 'one');
    await kv.put('b', 'two');
    await kv.put('gone', 'x');
    await kv.delete('gone');
    const faults = faultyKv(kv);

    const { mirror } = await startMirror({ kv: faults.kv });

    expect(mirror.lookup('a')).toEqual({ state: 'present', value: 'one' });
    expect(await mirror.get('b')).toBe('two');
    expect(mirror.lookup('gone')).toEqual({ state: 'absent' });
    expect(mirror.lookup('never')).toEqual({ state: 'absent' });
    expect(faults.reads()).toBe(0);
  });

  it('onLookup hears each value served from memory and each read of the bucket, and nothing for a key answered absent', async () => {
    const kv = await freshBucket();
    await kv.put('a', 'one');
    const heard: string[] = [];
    const { mirror } = await startMirror({ kv, onLookup: (source) => heard.push(source) });

    mirror.lookup('a');
    mirror.lookup('never');
    await mirror.read('a');
    await mirror.get('a');
    expect(heard).toEqual(['memory', 'kv', 'memory']);
  });

  it('a value stored, changed or deleted after start is answered as the watch delivers it', async () => {
    const kv = await freshBucket();
    const { mirror } = await startMirror({ kv });

    await kv.put('k', 'v1');
    await waitFor(() => mirror.lookup('k').state === 'present');
    await kv.put('k', 'v2');
    await waitFor(() => (mirror.lookup('k') as { value?: string }).value === 'v2');
    await kv.delete('k');
    await waitFor(() => mirror.lookup('k').state === 'absent');
  });

  it('a value the watch has not delivered yet is found by a read, which is kept until the watch catches up', async () => {
    const kv = await freshBucket();
    await kv.put('seed', 's');
    const faults = faultyKv(kv);
    const { mirror } = await startMirror({ kv: faults.kv });
    faults.hold();

    await kv.put('late', 'arrived');
    expect(mirror.lookup('late')).toEqual({ state: 'absent' });
    expect(await mirror.read('late')).toBe('arrived');
    expect(mirror.lookup('late')).toEqual({ state: 'present', value: 'arrived' });
    expect(faults.reads()).toBe(1);

    faults.release();
    await kv.put('late', 'changed');
    await waitFor(() => (mirror.lookup('late') as { value?: string }).value === 'changed');
  });

  it('keys() lists the keys holding a value while the mirror holds the whole bucket, and says nothing once it dropped one for room', async () => {
    const kv = await freshBucket();
    await kv.put('acme.e1', 'x');
    await kv.put('acme.e2', 'y');
    await kv.put('gone', 'z');
    await kv.delete('gone');
    const { mirror } = await startMirror({ kv, maxEntries: 3 });
    expect(mirror.keys()?.sort()).toEqual(['acme.e1', 'acme.e2']);
    await kv.put('beta.e1', 'w');
    await waitFor(() => mirror.keys()?.includes('beta.e1') === true || mirror.keys() === undefined);
    await kv.put('beta.e2', 'v');
    await waitFor(() => mirror.keys() === undefined, { description: 'the mirror to drop an entry for room' });
  });

  it('anyInGroup counts the keys holding a value per group as they are stored and deleted, and says nothing once one was dropped for room', async () => {
    const kv = await freshBucket();
    await kv.put('acme.e1', 'x');
    await kv.put('acme.task.t1', 'in no group');
    await kv.put('gone.e1', 'z');
    await kv.delete('gone.e1');
    const groupOf = (key: string): string | undefined =>
      key.split('.').length === 2 ? key.split('.')[0] : undefined;
    const { mirror } = await startMirror({ kv, maxEntries: 4, groupOf });
    expect(mirror.anyInGroup('acme')).toBe(true);
    expect(mirror.anyInGroup('gone')).toBe(false);
    expect(mirror.anyInGroup('beta')).toBe(false);

    await kv.put('beta.e1', 'w');
    await kv.put('acme.e2', 'y');
    await kv.delete('acme.e1');
    await waitFor(() => mirror.anyInGroup('beta') === true, { description: 'beta.e1 counted' });
    // acme still has e2; a value written again over a value is counted once.
    await kv.put('acme.e2', 'y2');
    await kv.delete('acme.e2');
    await waitFor(() => mirror.anyInGroup('acme') === false, { description: 'both acme endpoints gone' });
    expect(mirror.anyInGroup('beta')).toBe(true);

    for (const key of ['c.e1', 'd.e1', 'e.e1']) await kv.put(key, 'v');
    await waitFor(() => mirror.anyInGroup('beta') === undefined, {
      description: 'the mirror to drop an entry for room',
    });
  });

  it('when full, the least recently used entries are dropped, and a dropped key is read again once', async () => {
    const kv = await freshBucket();
    for (const key of ['a', 'b', 'c']) await kv.put(key, key.toUpperCase());
    const faults = faultyKv(kv);
    const { mirror } = await startMirror({ kv: faults.kv, maxEntries: 2 });

    expect(mirror.size()).toBe(2);
    expect(mirror.lookup('a')).toEqual({ state: 'unknown' });
    expect(mirror.lookup('never')).toEqual({ state: 'unknown' });
    expect(await mirror.get('a')).toBe('A');
    expect(await mirror.get('a')).toBe('A');
    expect(faults.reads()).toBe(1);
    expect(mirror.size()).toBe(2);
  });

  it('while its connection is down the mirror answers nothing from memory, and after the reconnect it follows changes made meanwhile', async () => {
    const proxy = await startTcpProxy(nats.port);
    const viaProxy = await connect({ servers: proxy.url, reconnectTimeWait: 50, maxReconnectAttempts: -1 });
    try {
      const name = `mirror_test_${++bucketCount}`;
      const kv = await freshBucket(name);
      await kv.put('k', 'before');
      const proxied = await new Kvm(jetstream(viaProxy)).open(name);
      const { mirror, events } = await startMirror({ kv: proxied, connection: viaProxy });
      expect(mirror.lookup('k')).toEqual({ state: 'present', value: 'before' });

      proxy.cut();
      await waitFor(() => !mirror.isLive(), { description: 'the mirror to notice the disconnect' });
      expect(mirror.lookup('k')).toEqual({ state: 'unknown' });
      await kv.put('k', 'during');
      proxy.restore();

      await waitFor(() => mirror.isLive(), { timeoutMs: 15_000, description: 'the mirror to follow again' });
      expect(mirror.lookup('k')).toEqual({ state: 'present', value: 'during' });
      expect(events.map((event) => event.type === 'stale' && event.reason)).toEqual(
        expect.arrayContaining(['disconnected', 'reconnected']),
      );
      mirror.stop();
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });

  it('when its watch ends, the mirror reads the bucket meanwhile and starts a new watch that sees every change', async () => {
    const kv = await freshBucket();
    await kv.put('k', 'v1');
    const faults = faultyKv(kv);
    const { mirror, events } = await startMirror({ kv: faults.kv });

    faults.refuseWatches = new Error('no watch for now');
    faults.started[0]!.stop();
    await waitFor(() => !mirror.isLive());
    expect(mirror.lookup('k')).toEqual({ state: 'unknown' });
    await kv.put('k', 'v2');
    expect(await mirror.get('k')).toBe('v2');
    faults.refuseWatches = undefined;

    await waitFor(() => mirror.isLive(), { description: 'a new watch' });
    expect(mirror.lookup('k')).toEqual({ state: 'present', value: 'v2' });
    expect(faults.watches()).toBeGreaterThanOrEqual(2);
    expect(events.some((event) => event.type === 'stale' && event.reason === 'watch_failed')).toBe(true);
  });

  it('when the watch cannot start, the mirror still resolves and every get reads the bucket', async () => {
    const kv = await freshBucket();
    await kv.put('k', 'stored');
    const faults = faultyKv(kv);
    faults.refuseWatches = new Error('permission denied');

    const { mirror } = await startMirror({ kv: faults.kv, retryDelayMs: { min: 60_000, max: 60_000 } });

    expect(mirror.isLive()).toBe(false);
    expect(await mirror.get('k')).toBe('stored');
    expect(await mirror.get('k')).toBe('stored');
    expect(faults.reads()).toBe(2);
  });

  it('an entry that does not decode is reported once and refused on every lookup until it is written again', async () => {
    const kv = await freshBucket();
    await kv.put('k', 'not json');
    const { mirror, events } = await startMirror({
      kv,
      decode: (_key, data) => JSON.parse(new TextDecoder().decode(data)) as string,
    });

    expect(() => mirror.lookup('k')).toThrow(SyntaxError);
    expect(() => mirror.lookup('k')).toThrow(SyntaxError);
    expect(events.filter((event) => event.type === 'invalid')).toHaveLength(1);
    await kv.put('k', '"fixed"');
    await waitFor(() => {
      try {
        return mirror.lookup('k').state === 'present';
      } catch {
        return false;
      }
    });
  });

  it('with room for no entries, the mirror never watches and every get reads', async () => {
    const kv = await freshBucket();
    await kv.put('k', 'v');
    const faults = faultyKv(kv);
    const { mirror } = await startMirror({ kv: faults.kv, maxEntries: 0 });

    expect(await mirror.get('k')).toBe('v');
    expect(await mirror.get('k')).toBe('v');
    expect(faults.watches()).toBe(0);
    expect(faults.reads()).toBe(2);
  });
});
