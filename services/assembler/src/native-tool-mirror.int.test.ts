// The native tools executors announce in `mesh_native_providers`, mirrored by the assembler into the shared
// catalogue of `mesh_tools` on real NATS.
import {
  accountScope,
  openMeshBuckets,
  openNativeProvidersBucket,
  ToolStore,
  scopedRegistryView,
  SHARED_CATALOGUE,
  type RegistryBucket,
} from '@agentmesh/bus';
import type { HttpTool, NativeProviderAnnouncement, NativeTool } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { followNativeProviders, mirrorNativeTools } from './native-tool-mirror.js';

let nats: NatsServer;
let nc: NatsConnection;
let bucket: KV;
let plugins: RegistryBucket;
let store: ToolStore;
let providers: KV;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  bucket = (await openMeshBuckets(js)).tools;
  plugins = scopedRegistryView(bucket, SHARED_CATALOGUE);
  store = new ToolStore(bucket);
  providers = await openNativeProvidersBucket(js, { ttlMs: 60_000 });
});

afterAll(async () => {
  await nc?.drain();
  await nats?.stop();
});

const clockTool = (description = 'tells the time', name = 'clock', className = 'ClockTool'): NativeTool => ({
  type: 'NATIVE',
  name,
  description,
  parameters: { type: 'object', properties: { zone: { type: 'string' } } },
  class_name: className,
});

describe('the native tool mirror in the shared catalogue', () => {
  it("a missing entry is written, an equal one left alone, a changed one updated; readers see the code's definition", async () => {
    const first = await mirrorNativeTools(plugins, [clockTool()]);
    const again = await mirrorNativeTools(plugins, [clockTool()]);
    const changed = await mirrorNativeTools(plugins, [clockTool('tells the time, precisely')]);

    expect(first).toEqual({ written: ['clock'], unchanged: [], refused: [] });
    expect(again).toEqual({ written: [], unchanged: ['clock'], refused: [] });
    expect(changed.written).toEqual(['clock']);
    expect(await store.get(SHARED_CATALOGUE, 'clock')).toEqual(clockTool('tells the time, precisely'));
  });

  it('assemblers mirroring one definition together write it once between them', async () => {
    const tool = clockTool('shared', 'shared_clock');
    const reports = await Promise.all(Array.from({ length: 4 }, () => mirrorNativeTools(plugins, [tool])));

    expect(reports.flatMap((report) => report.written)).toEqual(['shared_clock']);
    expect(reports.flatMap((report) => report.unchanged)).toHaveLength(3);
    expect(await store.get(SHARED_CATALOGUE, 'shared_clock')).toEqual(tool);
  });

  it('an HTTP plugin holding the name is not overwritten: the native tool is reported as refused', async () => {
    const plugin: HttpTool = {
      type: 'HTTP',
      name: 'taken_name',
      description: 'somebody else',
      parameters: { type: 'object', properties: {} },
      execution: { method: 'GET', url: 'http://127.0.0.1:9/x' },
    };
    await store.put(SHARED_CATALOGUE, plugin);
    const report = await mirrorNativeTools(plugins, [clockTool('x', 'taken_name')]);

    expect(report.refused).toEqual([{ name: 'taken_name', holder: 'a HTTP tool' }]);
    expect(await store.get(SHARED_CATALOGUE, 'taken_name')).toEqual(plugin);
  });

  it("a broken entry under a native tool's name is repaired", async () => {
    await bucket.put('shared.repaired_clock', new TextEncoder().encode('{"type":"NATIVE"'));
    const report = await mirrorNativeTools(plugins, [clockTool('x', 'repaired_clock')]);

    expect(report.written).toEqual(['repaired_clock']);
    expect(await store.get(SHARED_CATALOGUE, 'repaired_clock')).toMatchObject({ class_name: 'ClockTool' });
  });
});

describe('following the announcements of executors', () => {
  const announce = async (key: string, announcement: Omit<NativeProviderAnnouncement, 'announced_at'>) =>
    providers.put(key, JSON.stringify({ ...announcement, announced_at: new Date().toISOString() }));

  it("an executor's announced tools reach the shared catalogue; an announcement smuggling another class's tool is refused whole", async () => {
    const refused: string[] = [];
    const follower = await followNativeProviders(providers, plugins, {
      onMirrored: () => {},
      onRefused: (key) => refused.push(key),
      onError: (error) => {
        throw error;
      },
    });
    try {
      await announce('SearchTool.exec_1', {
        class_name: 'SearchTool',
        executor_id: 'exec-1',
        tools: [clockTool('searches', 'deep_search', 'SearchTool')],
      });
      await waitFor(() => store.get(SHARED_CATALOGUE, 'deep_search'), {
        description: 'deep_search mirrored',
      });

      await announce('SearchTool.exec_2', {
        class_name: 'SearchTool',
        executor_id: 'exec-2',
        tools: [clockTool('not mine', 'impostor', 'OtherTool')],
      });
      await waitFor(() => refused.includes('SearchTool.exec_2'), {
        description: 'the stray announcement refused',
      });
      expect(await store.get(SHARED_CATALOGUE, 'impostor')).toBeUndefined();
      // Only the shared catalogue is ever written: no account scope gets a native tool.
      expect(await store.resolve(accountScope('acme'), 'deep_search')).toMatchObject({
        scope: SHARED_CATALOGUE,
      });
    } finally {
      follower.stop();
    }
  });
});
