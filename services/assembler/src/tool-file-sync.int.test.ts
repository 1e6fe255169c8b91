import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  openMeshBuckets,
  ToolStore,
  scopedRegistryView,
  SHARED_CATALOGUE,
  TOOL_SOURCE_FILE_FIELD,
  type RegistryBucket,
  type ScopedPluginStore,
} from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { qichachaTool, seedFixture } from './__fixtures__/assembly.js';
import { syncToolFiles } from './tool-file-sync.js';

let nats: NatsServer;
let nc: NatsConnection;
let bucket: KV;
/** The shared catalogue, where tool files go. */
let kv: RegistryBucket;
let plugins: ScopedPluginStore;
let dir: string;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  bucket = (await openMeshBuckets(jetstream(nc))).tools;
  kv = scopedRegistryView(bucket, SHARED_CATALOGUE);
  plugins = new ToolStore(bucket).scoped(SHARED_CATALOGUE);
});
afterAll(async () => {
  await nc?.drain();
  await nats?.stop();
});
beforeEach(async () => {
  for await (const key of await bucket.keys()) await bucket.purge(key);
  dir = await mkdtemp(join(tmpdir(), 'assembler-sync-'));
  return () => rm(dir, { recursive: true, force: true });
});

async function put(path: string, content: unknown): Promise<void> {
  await mkdir(dirname(join(dir, path)), { recursive: true });
  await writeFile(join(dir, path), typeof content === 'string' ? content : JSON.stringify(content));
}

const qichacha = seedFixture('000-s2-plugin.json') as Record<string, unknown>;
const pythonTool = seedFixture('003-s2.2.3-execute-python-script.tool.json') as Record<string, unknown>;

async function revisionOf(name: string): Promise<number | undefined> {
  return (await kv.get(name))?.revision;
}

describe('syncing the registry with a tool directory', () => {
  it('seed 000 and seed 003 files are stored canonical under their tool names; a malformed file is reported and skipped', async () => {
    await put('qichacha.json', qichacha);
    await put('python.tool.json', pythonTool);
    await put('broken.json', '{ not json');

    const report = await syncToolFiles(kv, dir);

    expect(report.added).toEqual([
      { path: 'python.tool.json', name: 'core__execute-python-script', format: 'tool-json' },
      { path: 'qichacha.json', name: 'search_company_basic', format: 'http-plugin' },
    ]);
    expect(report.rejected).toEqual([
      { path: 'broken.json', reason: expect.stringMatching(/^not valid JSON/) },
    ]);
    // Readers see the canonical tool: the file marker is not part of the definition.
    expect(await plugins.get('search_company_basic')).toEqual(qichachaTool());
    expect((await plugins.get('core__execute-python-script'))?.type).toBe('SCRIPT');
    expect(
      (await kv.get('search_company_basic'))?.json<Record<string, unknown>>()[TOOL_SOURCE_FILE_FIELD],
    ).toBe('qichacha.json');
    expect((await plugins.list()).length).toBe(2);
  });

  it('a tool managed through the API is kept: neither the file nor a later edit of it overwrites it, and deleting the file does not remove it', async () => {
    const managed = { ...qichachaTool(), description: 'edited through the management API' };
    await plugins.put(managed);
    await put('qichacha.json', qichacha);

    const first = await syncToolFiles(kv, dir);
    await put('qichacha.json', { ...qichacha, description: 'edited file' });
    const second = await syncToolFiles(kv, dir);
    await rm(join(dir, 'qichacha.json'));
    const third = await syncToolFiles(kv, dir);

    expect(first.kept).toEqual([{ path: 'qichacha.json', name: 'search_company_basic' }]);
    expect(second.kept).toEqual([{ path: 'qichacha.json', name: 'search_company_basic' }]);
    expect([...first.added, ...second.updated, ...third.removed]).toEqual([]);
    expect(await plugins.get('search_company_basic')).toEqual(managed);
  });

  it('a file tool written again through the API becomes the API’s: the next file edit no longer applies', async () => {
    await put('qichacha.json', qichacha);
    await syncToolFiles(kv, dir);
    const managed = { ...qichachaTool(), description: 'taken over by the API' };
    await plugins.put(managed);
    await put('qichacha.json', { ...qichacha, description: 'edited file' });

    const report = await syncToolFiles(kv, dir);

    expect(report.kept.map(({ name }) => name)).toEqual(['search_company_basic']);
    expect(await plugins.get('search_company_basic')).toEqual(managed);
  });

  it('an edited file updates its tool; a deleted file removes it', async () => {
    await put('qichacha.json', qichacha);
    await syncToolFiles(kv, dir);

    await put('qichacha.json', { ...qichacha, description: 'edited file' });
    const edited = await syncToolFiles(kv, dir);
    expect(edited.updated).toEqual([
      { path: 'qichacha.json', name: 'search_company_basic', format: 'http-plugin' },
    ]);
    expect((await plugins.get('search_company_basic'))?.description).toBe('edited file');

    await rm(join(dir, 'qichacha.json'));
    const deleted = await syncToolFiles(kv, dir);
    expect(deleted.removed).toEqual([{ path: 'qichacha.json', name: 'search_company_basic' }]);
    expect(await plugins.get('search_company_basic')).toBeUndefined();
  });

  it('a file that turns invalid keeps its last good tool until it is fixed or deleted', async () => {
    await put('qichacha.json', qichacha);
    await syncToolFiles(kv, dir);

    await put('qichacha.json', '{"name": "search_company_basic", "descr');
    const broken = await syncToolFiles(kv, dir);

    expect(broken.rejected).toEqual([
      { path: 'qichacha.json', reason: expect.stringMatching(/^not valid JSON/) },
    ]);
    expect(broken.retained).toEqual([{ path: 'qichacha.json', name: 'search_company_basic' }]);
    expect(broken.removed).toEqual([]);
    expect(await plugins.get('search_company_basic')).toEqual(qichachaTool());
  });

  it('a file renamed, or whose tool is renamed, moves the tool: the new one is stored, the old name removed', async () => {
    await put('a.json', qichacha);
    await syncToolFiles(kv, dir);

    await rename(join(dir, 'a.json'), join(dir, 'b.json'));
    const moved = await syncToolFiles(kv, dir);
    expect(moved.updated.map(({ path, name }) => ({ path, name }))).toEqual([
      { path: 'b.json', name: 'search_company_basic' },
    ]);
    expect(moved.removed).toEqual([]);

    await put('b.json', { ...qichacha, name: 'search_company_v2' });
    const renamed = await syncToolFiles(kv, dir);
    expect(renamed.added.map(({ name }) => name)).toEqual(['search_company_v2']);
    expect(renamed.removed).toEqual([{ path: 'b.json', name: 'search_company_basic' }]);
    expect((await plugins.list()).map(({ name }) => name)).toEqual(['search_company_v2']);
  });

  it('between two files defining the same tool name, the lexicographically first path wins; when it goes, the other takes over', async () => {
    await put('b-qichacha.json', { ...qichacha, description: 'from b' });
    await put('a-qichacha.json', { ...qichacha, description: 'from a' });

    const report = await syncToolFiles(kv, dir);
    expect(report.added.map(({ path }) => path)).toEqual(['a-qichacha.json']);
    expect(report.shadowed).toEqual([
      { path: 'b-qichacha.json', name: 'search_company_basic', winner: 'a-qichacha.json' },
    ]);
    expect((await plugins.get('search_company_basic'))?.description).toBe('from a');

    await rm(join(dir, 'a-qichacha.json'));
    const after = await syncToolFiles(kv, dir);
    expect(after.updated.map(({ path }) => path)).toEqual(['b-qichacha.json']);
    expect((await plugins.get('search_company_basic'))?.description).toBe('from b');
  });

  it('syncing the same directory again (a restart, or a second instance) changes nothing', async () => {
    await put('qichacha.json', qichacha);
    await syncToolFiles(kv, dir);
    const revision = await revisionOf('search_company_basic');

    const again = await syncToolFiles(kv, dir);

    expect([...again.added, ...again.updated, ...again.removed]).toEqual([]);
    expect(again.unchanged.map(({ name }) => name)).toEqual(['search_company_basic']);
    expect(await revisionOf('search_company_basic')).toBe(revision);
  });

  it('instances syncing the same directory at the same time write each change once and agree on the result', async () => {
    await put('qichacha.json', qichacha);
    await put('python.tool.json', pythonTool);
    const instances = () => Promise.all([1, 2, 3, 4].map(() => syncToolFiles(kv, dir)));

    const created = await instances();
    expect(created.flatMap(({ added }) => added.map(({ name }) => name)).sort()).toEqual([
      'core__execute-python-script',
      'search_company_basic',
    ]);
    const createdRevision = await revisionOf('search_company_basic');

    await put('qichacha.json', { ...qichacha, description: 'edited file' });
    const edited = await instances();
    expect(edited.flatMap(({ updated }) => updated.map(({ name }) => name))).toEqual([
      'search_company_basic',
    ]);
    expect(edited.flatMap(({ contended }) => contended)).toEqual([]);
    expect(await revisionOf('search_company_basic')).toBeGreaterThan(createdRevision ?? Infinity);
    expect((await plugins.get('search_company_basic'))?.description).toBe('edited file');

    await rm(join(dir, 'qichacha.json'));
    const deleted = await instances();
    expect(deleted.flatMap(({ removed }) => removed.map(({ name }) => name))).toEqual([
      'search_company_basic',
    ]);
    expect((await plugins.list()).map(({ name }) => name)).toEqual(['core__execute-python-script']);
  });

  it('a directory that cannot be listed changes nothing in the registry', async () => {
    await put('qichacha.json', qichacha);
    await syncToolFiles(kv, dir);

    const report = await syncToolFiles(kv, join(dir, 'gone'));

    expect(report.listed).toBe(false);
    expect(report.removed).toEqual([]);
    expect(await plugins.get('search_company_basic')).toEqual(qichachaTool());
  });
});
