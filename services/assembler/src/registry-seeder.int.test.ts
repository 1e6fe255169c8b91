import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMeshBuckets, PluginStore } from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { qichachaTool, seedFixture } from './__fixtures__/assembly.js';
import { seedRegistry } from './registry-seeder.js';

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
let plugins: PluginStore;
let dir: string;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  kv = (await openMeshBuckets(jetstream(nc))).plugins;
  plugins = new PluginStore(kv);
});
afterAll(async () => {
  await nc?.drain();
  await nats?.stop();
});
beforeEach(async () => {
  for await (const key of await kv.keys()) await kv.purge(key);
  dir = await mkdtemp(join(tmpdir(), 'assembler-seed-'));
  return () => rm(dir, { recursive: true, force: true });
});

async function put(path: string, content: unknown): Promise<void> {
  await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
}

const qichacha = seedFixture('000-s2-plugin.json') as Record<string, unknown>;

describe('seeding the registry from a directory', () => {
  it('seed 000 and seed 003 files are stored canonical under their tool names; a malformed file is reported and skipped', async () => {
    await put('qichacha.json', qichacha);
    await put('python.tool.json', seedFixture('003-s2.2.3-execute-python-script.tool.json'));
    await put('broken.json', '{ not json');

    const report = await seedRegistry(kv, dir);

    expect(report.added).toEqual([
      { path: 'python.tool.json', name: 'core__execute-python-script', format: 'tool-json' },
      { path: 'qichacha.json', name: 'search_company_basic', format: 'http-plugin' },
    ]);
    expect(report.rejected).toEqual([
      { path: 'broken.json', reason: expect.stringMatching(/^not valid JSON/) },
    ]);
    expect(await plugins.get('search_company_basic')).toEqual(qichachaTool());
    expect((await plugins.get('core__execute-python-script'))?.type).toBe('SCRIPT');
    expect((await plugins.list()).length).toBe(2);
  });

  it('a tool already in the registry (written through the management API) is kept; the file does not overwrite it', async () => {
    const managed = { ...qichachaTool(), description: 'edited through the management API' };
    await plugins.put(managed);
    await put('qichacha.json', qichacha);

    const report = await seedRegistry(kv, dir);

    expect(report.added).toEqual([]);
    expect(report.kept).toEqual([{ path: 'qichacha.json', name: 'search_company_basic' }]);
    expect(await plugins.get('search_company_basic')).toEqual(managed);
  });

  it('between two files defining the same tool name, the lexicographically first path wins and the other is reported as shadowed', async () => {
    await put('b-qichacha.json', { ...qichacha, description: 'from b' });
    await put('a-qichacha.json', { ...qichacha, description: 'from a' });

    const report = await seedRegistry(kv, dir);

    expect(report.added.map(({ path }) => path)).toEqual(['a-qichacha.json']);
    expect(report.shadowed).toEqual([
      { path: 'b-qichacha.json', name: 'search_company_basic', winner: 'a-qichacha.json' },
    ]);
    expect((await plugins.get('search_company_basic'))?.description).toBe('from a');
  });

  it('seeding the same directory again (a restart, or a second instance) adds nothing and changes nothing', async () => {
    await put('qichacha.json', qichacha);
    await seedRegistry(kv, dir);
    const revision = (await kv.get('search_company_basic'))?.revision;

    const again = await seedRegistry(kv, dir);

    expect(again.added).toEqual([]);
    expect(again.kept.map(({ name }) => name)).toEqual(['search_company_basic']);
    expect((await kv.get('search_company_basic'))?.revision).toBe(revision);
  });
});
