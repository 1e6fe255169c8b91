import {
  accountScope,
  AgentStore,
  openMeshBuckets,
  SHARED_CATALOGUE,
  startLiveAgents,
  type MeshBuckets,
} from '@agentmesh/bus';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, receivedTask } from './__fixtures__/assembly.js';
import { agentLookup } from './registry-lookups.js';
import { assembleTask, type AssemblySources } from './task-assembler.js';

let nats: NatsServer;
let nc: NatsConnection;
let buckets: MeshBuckets;
let live: Awaited<ReturnType<typeof startLiveAgents>>;
const executorKey = generateVaultKeyPair('lookups-test');

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  buckets = await openMeshBuckets(jetstream(nc));
  const store = new AgentStore(buckets.agents);
  for (const prompt of ['first', 'second']) {
    await store.put(accountScope(ACCOUNT), {
      workflow_id: 'versioned',
      system_prompt: prompt,
      model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
    });
  }
  // An entry written before versions existed.
  await buckets.agents.put(
    'shared.legacy',
    JSON.stringify({
      workflow_id: 'legacy',
      system_prompt: 'old',
      model: { model_name: 'm', base_url: 'http://127.0.0.1:9/v1' },
    }),
  );
  live = await startLiveAgents(buckets.agents, { maxEntries: 100 });
});
afterAll(async () => {
  live?.stop();
  await nc?.close();
  await nats?.stop();
});

function sources(): AssemblySources {
  return {
    agents: agentLookup(live),
    tools: { resolve: async () => undefined },
    credentials: { resolve: async () => ({ values: {}, missing: [] }) },
    sealFor: { kid: executorKey.kid, publicKey: executorKey.publicKey },
  };
}

const pinned = (workflowId: string, version?: number) => {
  const task = receivedTask(workflowId);
  return version === undefined ? task : { ...task, task_meta: { ...task.task_meta, agent_version: version } };
};

describe('agent versions at assembly', () => {
  it('when a task pins nothing, it runs the current version and its task_meta says which', async () => {
    const outcome = await assembleTask(pinned('versioned'), sources());
    expect(outcome.ok && outcome.task.task_meta).toMatchObject({
      agent_version: 2,
      agent_digest: expect.any(String),
    });
    expect(outcome.ok && outcome.task.input.messages[0]).toMatchObject({ role: 'system', content: 'second' });
  });

  it('when a task pins version 1, it runs version 1', async () => {
    const outcome = await assembleTask(pinned('versioned', 1), sources());
    expect(outcome.ok && outcome.task.task_meta.agent_version).toBe(1);
    expect(outcome.ok && outcome.task.input.messages[0]).toMatchObject({ content: 'first' });
  });

  it('when a task pins a version the agent does not keep, assembly fails NOT_FOUND naming the version', async () => {
    const outcome = await assembleTask(pinned('versioned', 7), sources());
    expect(outcome.ok).toBe(false);
    if (outcome.ok) return;
    expect(outcome.failure.toEventData()).toMatchObject({
      code: 'NOT_FOUND',
      detail: { workflow_id: 'versioned', version: 7 },
    });
    expect(outcome.failure.message).toContain('version 7');
  });

  it('when an agent was stored before versions existed, it runs as version 1, pinned or not', async () => {
    for (const version of [undefined, 1]) {
      const outcome = await assembleTask(pinned('legacy', version), sources());
      expect(outcome.ok && outcome.task.task_meta.agent_version).toBe(1);
    }
    expect(await new AgentStore(buckets.agents).get(SHARED_CATALOGUE, 'legacy')).toMatchObject({
      version: 1,
    });
  });
});
