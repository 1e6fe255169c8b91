import { Buckets, LegacyBuckets } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyLegacyToolBucket } from './legacy-tool-bucket.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe('the tool bucket of before (mesh_plugins)', () => {
  it('when there is none, nothing is copied and nothing fails', async () => {
    const tools = await new Kvm(js).create(Buckets.TOOLS);
    expect(await copyLegacyToolBucket(js, tools)).toEqual({ found: false, copied: [], kept: [] });
  });

  it('when it exists, its entries are copied byte for byte, an entry the tool bucket already has is kept, deleted ones are not revived, and a second run copies nothing', async () => {
    const kvm = new Kvm(js);
    const legacy = await kvm.create(LegacyBuckets.PLUGINS);
    const tools = await kvm.open(Buckets.TOOLS);
    await legacy.put('shared.lookup', '{"name":"lookup","v":1}');
    await legacy.put('acct.acme.report', '{"name":"report"}');
    await legacy.put('shared.newer', '{"name":"newer","v":"old"}');
    await legacy.put('shared.gone', '{"name":"gone"}');
    await legacy.delete('shared.gone');
    await tools.put('shared.newer', '{"name":"newer","v":"new"}');

    const report = await copyLegacyToolBucket(js, tools);

    expect(report.found).toBe(true);
    expect(report.copied.sort()).toEqual(['acct.acme.report', 'shared.lookup']);
    expect(report.kept).toEqual(['shared.newer']);
    expect((await tools.get('shared.lookup'))?.string()).toBe('{"name":"lookup","v":1}');
    expect((await tools.get('shared.newer'))?.string()).toBe('{"name":"newer","v":"new"}');
    expect(await tools.get('shared.gone')).toBeNull();
    // The old bucket is left as it was.
    expect((await legacy.get('shared.lookup'))?.string()).toBe('{"name":"lookup","v":1}');

    const again = await copyLegacyToolBucket(js, tools);
    expect(again.copied).toEqual([]);
    expect(again.kept.sort()).toEqual(['acct.acme.report', 'shared.lookup', 'shared.newer']);
  });
});
