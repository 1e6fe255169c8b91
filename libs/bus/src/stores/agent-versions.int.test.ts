import { type AgentDefinitionInput } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountScope, scopedKey, SHARED_CATALOGUE } from '../registry/registry-scope.js';
import { openMeshBuckets, type MeshBuckets } from '../resources.js';
import { encodeJson } from '../json.js';
import { agentDigest, AgentStore, migrateUnversionedAgents, versionKey } from './agent-store.js';

let nats: NatsServer;
let nc: NatsConnection;
let buckets: MeshBuckets;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  buckets = await openMeshBuckets(jetstream(nc));
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const agent = (id: string, prompt: string): AgentDefinitionInput => ({
  workflow_id: id,
  system_prompt: prompt,
  model: { model_name: 'm', base_url: 'http://127.0.0.1:1/v1' },
});

describe('agent versions', () => {
  const acme = accountScope('acme');

  it('when an agent is written three times, each write is a new version and the name points at the last', async () => {
    const store = new AgentStore(buckets.agents);
    const v1 = await store.put(acme, agent('writer', 'one'));
    const v2 = await store.put(acme, agent('writer', 'two'));
    const v3 = await store.put(acme, agent('writer', 'three'));
    expect([v1.version, v2.version, v3.version]).toEqual([1, 2, 3]);
    expect(v1.digest).toBe(agentDigest(agent('writer', 'one')));
    expect(v1.digest).not.toBe(v2.digest);
    expect(await store.get(acme, 'writer')).toMatchObject({ version: 3, system_prompt: 'three' });
    expect(await store.getVersion(acme, 'writer', 1)).toMatchObject({ version: 1, system_prompt: 'one' });
    expect((await store.versions(acme, 'writer'))?.versions.map((v) => [v.version, v.current])).toEqual([
      [3, true],
      [2, false],
      [1, false],
    ]);
  });

  it('when the name is rolled back, it points at the old version and no version is made; the next write counts on', async () => {
    const store = new AgentStore(buckets.agents);
    for (const prompt of ['one', 'two', 'three']) await store.put(acme, agent('rolled', prompt));
    const before = await buckets.agents.get(versionKey(acme, 'rolled', 2));

    expect(await store.rollback(acme, 'rolled', 2)).toMatchObject({ version: 2, system_prompt: 'two' });
    expect(await store.get(acme, 'rolled')).toMatchObject({ version: 2, system_prompt: 'two' });
    expect((await store.versions(acme, 'rolled'))?.versions.map((v) => v.version)).toEqual([3, 2, 1]);
    // The version itself was not rewritten.
    expect((await buckets.agents.get(versionKey(acme, 'rolled', 2)))?.revision).toBe(before?.revision);

    expect((await store.put(acme, agent('rolled', 'four'))).version).toBe(4);
    expect(await store.rollback(acme, 'rolled', 9)).toBeUndefined();
    expect(await store.rollback(acme, 'nobody', 1)).toBeUndefined();
  });

  it('when a kept version would be written again, it is refused: versions are immutable', async () => {
    const store = new AgentStore(buckets.agents);
    await store.put(acme, agent('frozen', 'one'));
    await expect(buckets.agents.create(versionKey(acme, 'frozen', 1), encodeJson({}))).rejects.toThrow();
    expect(await store.getVersion(acme, 'frozen', 1)).toMatchObject({ system_prompt: 'one' });
  });

  it('when more versions are written than are kept, the oldest go but the current one stays', async () => {
    const store = new AgentStore(buckets.agents);
    for (const prompt of ['1', '2', '3']) await store.put(acme, agent('kept', prompt), { keep: 2 });
    expect((await store.versions(acme, 'kept'))?.versions.map((v) => v.version)).toEqual([3, 2]);
    await store.rollback(acme, 'kept', 2);
    await store.put(acme, agent('kept', '4'), { keep: 1 });
    expect((await store.versions(acme, 'kept'))?.versions.map((v) => v.version)).toEqual([4]);
    expect(await store.getVersion(acme, 'kept', 1)).toBeUndefined();
  });

  it('when two writers write one agent at once, each gets its own version', async () => {
    const store = new AgentStore(buckets.agents);
    const written = await Promise.all(
      ['a', 'b', 'c', 'd'].map((prompt) => store.put(acme, agent('raced', prompt))),
    );
    expect(written.map((w) => w.version).sort()).toEqual([1, 2, 3, 4]);
    for (const w of written) {
      expect(await store.getVersion(acme, 'raced', w.version)).toMatchObject({
        system_prompt: w.system_prompt,
      });
    }
  });

  it('when another account asks, it sees neither the versions nor can it roll back', async () => {
    const store = new AgentStore(buckets.agents);
    await store.put(acme, agent('private_agent', 'one'));
    await store.put(acme, agent('private_agent', 'two'));
    const globex = accountScope('globex');
    expect(await store.versions(globex, 'private_agent')).toBeUndefined();
    expect(await store.resolveVersion(globex, 'private_agent', 1)).toBeUndefined();
    expect(await store.rollback(globex, 'private_agent', 1)).toBeUndefined();
    expect(await store.get(acme, 'private_agent')).toMatchObject({ version: 2 });
  });

  it('when an agent was stored before versions existed, it reads as version 1 and the migration keeps it as 1', async () => {
    const store = new AgentStore(buckets.agents);
    const legacy = { ...agent('legacy_agent', 'old'), tools: [], max_steps: 10 };
    await buckets.agents.put(scopedKey(SHARED_CATALOGUE, 'legacy_agent'), encodeJson(legacy));
    expect(await store.get(SHARED_CATALOGUE, 'legacy_agent')).toMatchObject({
      version: 1,
      system_prompt: 'old',
    });
    expect(await store.getVersion(SHARED_CATALOGUE, 'legacy_agent', 1)).toMatchObject({
      system_prompt: 'old',
    });

    expect(await migrateUnversionedAgents(buckets.agents)).toContain('shared.legacy_agent');
    expect(await migrateUnversionedAgents(buckets.agents)).not.toContain('shared.legacy_agent');
    const stamped = JSON.parse((await buckets.agents.get('shared.legacy_agent'))!.string()) as {
      version: number;
    };
    expect(stamped.version).toBe(1);
    expect((await store.put(SHARED_CATALOGUE, agent('legacy_agent', 'new'))).version).toBe(2);
    expect(await store.getVersion(SHARED_CATALOGUE, 'legacy_agent', 1)).toMatchObject({
      system_prompt: 'old',
    });
  });

  it('when an agent is deleted, its versions go with it and it starts again at 1', async () => {
    const store = new AgentStore(buckets.agents);
    await store.put(acme, agent('gone', 'one'));
    await store.put(acme, agent('gone', 'two'));
    expect(await store.delete(acme, 'gone')).toBe(true);
    expect(await store.getVersion(acme, 'gone', 1)).toBeUndefined();
    expect((await store.put(acme, agent('gone', 'again'))).version).toBe(1);
  });
});
