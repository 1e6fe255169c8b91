import { agentModels, fromHttpPlugin, type AgentDefinition } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptRecordError } from '../errors.js';
import { AgentStore } from '../stores/agent-store.js';
import { ToolStore } from '../stores/tool-store.js';
import { faultyKv } from '../stores/__fixtures__/kv-faults.js';
import { startLiveAgents, startLiveTools, type LiveDefinitions } from './live-definitions.js';
import { accountScope, SHARED_CATALOGUE } from './registry-scope.js';

let nats: NatsServer;
let nc: NatsConnection;
let bucketCount = 0;
const started: LiveDefinitions<never>[] = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const live of started) live.stop();
  await nc?.close();
  await nats?.stop();
});

async function freshBucket(): Promise<KV> {
  return new Kvm(jetstream(nc)).create(`registry_test_${++bucketCount}`);
}

function keep<T>(live: T): T {
  started.push(live as unknown as LiveDefinitions<never>);
  return live;
}

const agent = (workflowId: string, baseUrl: string, tools: string[] = []) => ({
  workflow_id: workflowId,
  model: { model_name: 'm', base_url: baseUrl },
  tools,
});

const plugin = (name: string, description = 'd') => ({
  ...fromHttpPlugin({
    schema_version: 'v1',
    name,
    description,
    parameters: { type: 'object', properties: {} },
    execution: { method: 'GET', base_url: 'http://127.0.0.1/x', param_placement: 'query' },
  }),
});

describe('live registry definitions', () => {
  it("a task resolves its account's own agent first, then the shared one, never another account's, without reading KV", async () => {
    const kv = await freshBucket();
    const agents = new AgentStore(kv);
    await agents.put(SHARED_CATALOGUE, agent('helper', 'http://127.0.0.1:1/shared'));
    await agents.put(accountScope('acme'), agent('helper', 'http://127.0.0.1:1/acme'));
    await agents.put(accountScope('globex'), agent('private', 'http://127.0.0.1:1/globex'));
    const faults = faultyKv(kv);
    const live = keep(await startLiveAgents(faults.kv, { maxEntries: 100 }));

    expect(baseUrlOf((await live.resolve(accountScope('acme'), 'helper'))?.found)).toBe(
      'http://127.0.0.1:1/acme',
    );
    expect(await live.resolve(accountScope('globex'), 'helper')).toMatchObject({
      scope: { kind: 'shared' },
      found: { model: { base_url: 'http://127.0.0.1:1/shared' } },
    });
    expect(faults.reads()).toBe(0);
    // Not found anywhere the mirror looks: read once more from KV (own account, then shared) and still absent.
    expect(await live.resolve(accountScope('acme'), 'private')).toBeUndefined();
    expect(faults.reads()).toBe(2);
  });

  it('an agent stored a moment before the task is found even when the watch has not delivered it yet', async () => {
    const kv = await freshBucket();
    const faults = faultyKv(kv);
    const live = keep(await startLiveAgents(faults.kv, { maxEntries: 100 }));
    faults.hold();

    await new AgentStore(kv).put(accountScope('acme'), agent('fresh', 'http://127.0.0.1:1/fresh'));

    expect(await live.resolve(accountScope('acme'), 'fresh')).toMatchObject({
      scope: { kind: 'account', accountId: 'acme' },
      found: { workflow_id: 'fresh' },
    });
    faults.release();
  });

  it("an agent's changed tools are what the next resolution sees, and a deleted agent is gone", async () => {
    const kv = await freshBucket();
    const agents = new AgentStore(kv);
    await agents.put(SHARED_CATALOGUE, agent('bot', 'http://127.0.0.1:1/v1', ['lookup']));
    const live = keep(await startLiveAgents(kv, { maxEntries: 100 }));
    const tools = async (): Promise<readonly string[] | undefined> =>
      (await live.resolve(accountScope('acme'), 'bot'))?.found.tools;
    expect(await tools()).toEqual(['lookup']);

    await agents.put(SHARED_CATALOGUE, agent('bot', 'http://127.0.0.1:1/v1', ['lookup', 'weather']));
    await waitFor(async () => (await tools())?.length === 2);
    expect(await tools()).toEqual(['lookup', 'weather']);

    await agents.delete(SHARED_CATALOGUE, 'bot');
    await waitFor(async () => (await tools()) === undefined);
  });

  it("an account's own tool shadows the shared one for that account only", async () => {
    const kv = await freshBucket();
    const plugins = new ToolStore(kv);
    await plugins.put(SHARED_CATALOGUE, plugin('lookup'));
    await plugins.put(accountScope('acme'), plugin('lookup', 'acme lookup'));
    const live = keep(await startLiveTools(kv, { maxEntries: 100 }));

    expect((await live.resolve(accountScope('acme'), 'lookup'))?.found.description).toBe('acme lookup');
    expect((await live.resolve(accountScope('globex'), 'lookup'))?.found.description).toBe('d');
    expect(await live.resolve(SHARED_CATALOGUE, 'lookup')).toMatchObject({ scope: { kind: 'shared' } });
  });

  it('a definition handed out is frozen, so no task can change it for the next', async () => {
    const kv = await freshBucket();
    await new AgentStore(kv).put(SHARED_CATALOGUE, agent('bot', 'http://127.0.0.1:1/v1', ['lookup']));
    const live = keep(await startLiveAgents(kv, { maxEntries: 100 }));
    const found = (await live.resolve(accountScope('acme'), 'bot'))!.found;

    expect(() => (found.tools as string[]).push('other')).toThrow(TypeError);
    expect((await live.resolve(accountScope('acme'), 'bot'))?.found.tools).toEqual(['lookup']);
  });

  it('an entry that does not match its schema fails the resolution with CorruptRecordError, as a read would', async () => {
    const kv = await freshBucket();
    await kv.put('shared.broken', '{"type":"HTTP"}');
    const live = keep(await startLiveTools(kv, { maxEntries: 100 }));

    await expect(live.resolve(accountScope('acme'), 'broken')).rejects.toThrow(CorruptRecordError);
  });
});

/** The base URL of an agent's first model. */
function baseUrlOf(agent: AgentDefinition | undefined): string | undefined {
  return agent === undefined ? undefined : agentModels(agent)[0]?.base_url;
}
