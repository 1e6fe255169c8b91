import { createHash, randomBytes } from 'node:crypto';
import {
  agentModels,
  canonicalJson,
  fromHttpPlugin,
  type AgentDefinition,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidRegistryNameError } from '../errors.js';
import { collect } from '../kv-keys.js';
import { migrateLegacyRegistryEntries } from '../registry/legacy-registry-migration.js';
import { accountScope, SHARED_CATALOGUE } from '../registry/registry-scope.js';
import { openMeshBuckets, type MeshBuckets } from '../resources.js';
import { AgentStore } from './agent-store.js';
import { ApiKeyStore } from './api-key-store.js';
import { CredentialStore } from './credential-store.js';
import { IdempotencyStore } from './idempotency-store.js';
import { ToolStore } from './tool-store.js';
import { TaskStatusStore } from './task-status-store.js';

const digestKey = randomBytes(32);
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

const plugin = (name: string) =>
  fromHttpPlugin({
    schema_version: 'v1',
    name,
    description: 'd',
    parameters: { type: 'object', properties: {} },
    execution: { method: 'GET', base_url: 'http://127.0.0.1/x', param_placement: 'query' },
  });

describe('credential store', () => {
  const master = { kid: 'm1', key: randomBytes(32).toString('base64') };
  const canary = 'canary-cred-0d41f9';

  it('stores values encrypted, lists names only, and resolves what is asked with the missing names', async () => {
    const store = new CredentialStore(buckets.credentials, { current: master });
    await store.put('acme', 'user@example.com', 'QCC_KEY', canary);
    await store.put('acme', 'user@example.com', 'QCC_SECRET', 's2');
    await store.put('other', 'user@example.com', 'QCC_KEY', 'not-yours');

    expect(await store.listNames('acme', 'user@example.com')).toEqual(['QCC_KEY', 'QCC_SECRET']);
    const keys: string[] = [];
    for await (const key of await buckets.credentials.keys()) keys.push(key);
    for (const key of keys) expect((await buckets.credentials.get(key))!.string()).not.toContain(canary);

    expect(await store.resolve('acme', 'user@example.com', ['QCC_KEY', 'MISSING'])).toEqual({
      values: { QCC_KEY: canary },
      missing: ['MISSING'],
    });
    expect(await store.delete('acme', 'user@example.com', 'QCC_SECRET')).toBe(true);
    expect(await store.listNames('acme', 'user@example.com')).toEqual(['QCC_KEY']);
  });

  it("an account-wide credential serves every user of that account, a user's own of the same name wins, and neither set lists the other's names", async () => {
    const store = new CredentialStore(buckets.credentials, { current: master });
    await store.putAccountCredential('wide', 'MODEL_KEY', canary);
    await store.putAccountCredential('wide', 'SEARCH_KEY', 'account-search');
    await store.put('wide', 'picky-user', 'SEARCH_KEY', 'own-search');

    expect(await store.accountCredentialNames('wide')).toEqual(['MODEL_KEY', 'SEARCH_KEY']);
    expect(await store.listNames('wide', 'picky-user')).toEqual(['SEARCH_KEY']);
    expect(await store.listNames('wide', 'anyone')).toEqual([]);
    expect(await store.resolve('wide', 'anyone', ['MODEL_KEY', 'SEARCH_KEY'])).toEqual({
      values: { MODEL_KEY: canary, SEARCH_KEY: 'account-search' },
      missing: [],
    });
    expect(await store.resolve('wide', 'picky-user', ['MODEL_KEY', 'SEARCH_KEY'])).toEqual({
      values: { MODEL_KEY: canary, SEARCH_KEY: 'own-search' },
      missing: [],
    });
    // Another account's users are not served, nor listed.
    expect(await store.resolve('narrow', 'anyone', ['MODEL_KEY'])).toEqual({
      values: {},
      missing: ['MODEL_KEY'],
    });
    expect(await store.accountCredentialNames('narrow')).toEqual([]);

    // Deleting the user's own falls back to the account's; deleting the account's leaves it missing.
    expect(await store.delete('wide', 'picky-user', 'SEARCH_KEY')).toBe(true);
    expect((await store.resolve('wide', 'picky-user', ['SEARCH_KEY'])).values).toEqual({
      SEARCH_KEY: 'account-search',
    });
    expect(await store.deleteAccountCredential('wide', 'SEARCH_KEY')).toBe(true);
    expect(await store.deleteAccountCredential('wide', 'SEARCH_KEY')).toBe(false);
    expect(await store.resolve('wide', 'picky-user', ['SEARCH_KEY'])).toEqual({
      values: {},
      missing: ['SEARCH_KEY'],
    });
    expect(await store.accountCredentialNames('wide')).toEqual(['MODEL_KEY']);
  });
});

describe('plugin store', () => {
  it('a live catalogue sees tools that exist at start and tools added or removed later', async () => {
    const store = new ToolStore(buckets.tools);
    await store.put(SHARED_CATALOGUE, plugin('early_tool'));
    const catalogue = await store.catalogue();
    expect(catalogue.get(SHARED_CATALOGUE, 'early_tool')?.type).toBe('HTTP');
    await store.put(accountScope('acme'), plugin('late_tool'));
    await waitFor(() => catalogue.get(accountScope('acme'), 'late_tool'));
    await store.delete(SHARED_CATALOGUE, 'early_tool');
    await waitFor(() => catalogue.get(SHARED_CATALOGUE, 'early_tool') === undefined);
    catalogue.stop();
  });

  it("an account's own tool shadows the shared one for that account only, and no other account ever sees it", async () => {
    const store = new ToolStore(buckets.tools);
    const shared = plugin('lookup');
    const acmes = { ...plugin('lookup'), description: 'acme lookup' };
    await store.put(SHARED_CATALOGUE, shared);
    await store.put(accountScope('acme'), acmes);
    const catalogue = await store.catalogue();
    expect(catalogue.resolve(accountScope('acme'), 'lookup')).toMatchObject({
      scope: { kind: 'account' },
      tool: { description: 'acme lookup' },
    });
    expect(catalogue.resolve(accountScope('globex'), 'lookup')).toMatchObject({
      scope: { kind: 'shared' },
      tool: { description: 'd' },
    });
    expect(await store.resolve(accountScope('globex'), 'lookup')).toMatchObject({
      scope: { kind: 'shared' },
    });
    expect((await store.list(accountScope('globex'))).map((tool) => tool.name)).not.toContain('lookup');
    catalogue.stop();
  });

  it('an entry that does not parse is reported and skipped, not fatal', async () => {
    const store = new ToolStore(buckets.tools);
    await buckets.tools.put('shared.broken', '{"type":"HTTP"}');
    const invalid: string[] = [];
    const catalogue = await store.catalogue((key) => invalid.push(key));
    expect(invalid).toContain('shared.broken');
    expect(catalogue.get(SHARED_CATALOGUE, 'broken')).toBeUndefined();
    catalogue.stop();
    await buckets.tools.delete('shared.broken');
  });

  it('an AGENT tool is refused (agents make those, from sub_agents) and nothing is stored', async () => {
    const store = new ToolStore(buckets.tools);
    const agentTool = {
      type: 'AGENT' as const,
      name: 'agent_helper',
      description: 'asks the helper',
      parameters: { type: 'object' as const, properties: { input: { type: 'string' } } },
      workflow_id: 'helper',
    };
    await expect(store.put(SHARED_CATALOGUE, agentTool)).rejects.toMatchObject({
      name: 'AgentToolNotStorableError',
      code: 'INVALID_REQUEST',
    });
    expect(await store.get(SHARED_CATALOGUE, 'agent_helper')).toBeUndefined();
  });

  it('names that are not registry keys (wildcards, spaces, unicode) are refused before KV is touched', async () => {
    const store = new ToolStore(buckets.tools);
    for (const name of ['*', '>', 'a b', 'caf\u00e9', 'a..b', '']) {
      await expect(store.get(SHARED_CATALOGUE, name)).rejects.toThrow(InvalidRegistryNameError);
    }
  });
});

describe('agent store', () => {
  const agent = (workflowId: string, baseUrl = 'http://127.0.0.1:1/v1') => ({
    workflow_id: workflowId,
    model: { model_name: 'm', base_url: baseUrl },
    tools: ['search_company_basic'],
  });

  it('stores an agent with defaults applied and lists it in its scope only', async () => {
    const agents = new AgentStore(buckets.agents);
    const stored = await agents.put(accountScope('acme'), agent('qcc_agent'));
    expect(stored.max_steps).toBeGreaterThan(0);
    expect(await agents.get(accountScope('acme'), 'qcc_agent')).toEqual(stored);
    expect((await agents.list(accountScope('acme'))).map((a) => a.workflow_id)).toContain('qcc_agent');
    expect((await agents.list(SHARED_CATALOGUE)).map((a) => a.workflow_id)).not.toContain('qcc_agent');
    expect(await agents.resolve(accountScope('globex'), 'qcc_agent')).toBeUndefined();
    expect(await agents.delete(accountScope('acme'), 'qcc_agent')).toBe(true);
    expect(await agents.get(accountScope('acme'), 'qcc_agent')).toBeUndefined();
  });

  it("a run resolves its account's own agent first, then the shared one", async () => {
    const agents = new AgentStore(buckets.agents);
    await agents.put(SHARED_CATALOGUE, agent('helper', 'http://127.0.0.1:1/shared'));
    await agents.put(accountScope('acme'), agent('helper', 'http://127.0.0.1:1/acme'));
    expect(baseUrlOf((await agents.resolve(accountScope('acme'), 'helper'))?.agent)).toBe(
      'http://127.0.0.1:1/acme',
    );
    expect(baseUrlOf((await agents.resolve(accountScope('globex'), 'helper'))?.agent)).toBe(
      'http://127.0.0.1:1/shared',
    );
  });
});

describe('legacy registry entries', () => {
  it('entries keyed by bare names move to the shared catalogue once, byte for byte; scoped ones stay', async () => {
    const js = jetstream(nc);
    const { agents: kv } = await openMeshBuckets(js);
    const legacy = JSON.stringify(agent('legacy_bot'));
    await kv.put('legacy_bot', legacy);
    // A dotted workflow id that looks like a scoped key is still recognised as legacy by its content.
    await kv.put('shared.dotted', JSON.stringify(agent('shared.dotted')));
    await new AgentStore(kv).put(accountScope('acme'), agent('tenant_bot'));

    const report = await migrateLegacyRegistryEntries(kv, 'workflow_id');
    expect(report.moved.sort()).toEqual(['legacy_bot', 'shared.dotted']);
    expect((await kv.get('shared.legacy_bot'))?.string()).toBe(legacy);
    expect(await kv.get('legacy_bot')).toMatchObject({ operation: 'DEL' });
    expect(await new AgentStore(kv).get(SHARED_CATALOGUE, 'shared.dotted')).toMatchObject({
      workflow_id: 'shared.dotted',
    });
    expect(await new AgentStore(kv).get(accountScope('acme'), 'tenant_bot')).toBeDefined();
    expect((await migrateLegacyRegistryEntries(kv, 'workflow_id')).moved).toEqual([]);
  });

  function agent(workflowId: string) {
    return {
      workflow_id: workflowId,
      model: { model_name: 'm', base_url: 'http://127.0.0.1:1/v1' },
      tools: [],
      max_steps: 10,
    };
  }
});

describe('task status store', () => {
  const record = (traceId: string, accountId = 'acme'): TaskStatusRecord => ({
    trace_id: traceId,
    account_id: accountId,
    workflow_id: 'w',
    status: 'queued',
    attempt: 0,
    updated_at: new Date().toISOString(),
  });

  it('creates once, and concurrent updates are all applied', async () => {
    const store = new TaskStatusStore(buckets.tasks);
    const traceId = 'b'.repeat(32);
    expect(await store.create(record(traceId))).toBe(true);
    expect(await store.create(record(traceId))).toBe(false);
    await Promise.all(
      Array.from({ length: 5 }, () =>
        store.update('acme', traceId, (current) => ({ ...current!, attempt: current!.attempt + 1 })),
      ),
    );
    expect((await store.get('acme', traceId))?.attempt).toBe(5);
  });

  it('two accounts using one trace id each have their own task, and neither sees the other', async () => {
    const store = new TaskStatusStore(buckets.tasks);
    const traceId = 'f'.repeat(32);
    expect(await store.create(record(traceId, 'acme'))).toBe(true);
    expect(await store.get('globex', traceId)).toBeUndefined();
    expect(await store.create(record(traceId, 'globex'))).toBe(true);
    await store.update('globex', traceId, (current) => ({ ...current!, status: 'running' }));
    expect((await store.get('acme', traceId))?.status).toBe('queued');
    expect((await store.get('globex', traceId))?.status).toBe('running');
  });

  it('a change from a known revision writes without reading, and a cancel written in between is kept', async () => {
    const store = new TaskStatusStore(buckets.tasks);
    const traceId = 'c'.repeat(32);
    await store.create(record(traceId));
    const running = await store.updateFrom('acme', traceId, (current) => ({
      ...current!,
      status: 'running',
    }));
    expect(running?.record.status).toBe('running');
    // The executor's next change starts from what it stored: one write when nobody else wrote.
    const stepped = await store.updateFrom(
      'acme',
      traceId,
      (current) => ({ ...current!, attempt: 1 }),
      running,
    );
    expect(stepped!.revision).toBeGreaterThan(running!.revision);
    // A cancel request lands in between; a change from the now stale revision is applied on top of it.
    await store.update('acme', traceId, (current) => ({
      ...current!,
      cancel_requested_at: new Date().toISOString(),
    }));
    const seen: (string | undefined)[] = [];
    const final = await store.updateFrom(
      'acme',
      traceId,
      (current) => {
        seen.push(current?.cancel_requested_at);
        return { ...current!, status: 'cancelled' };
      },
      stepped,
    );
    expect(seen).toHaveLength(2);
    expect(seen[0]).toBeUndefined();
    expect(final?.record).toMatchObject({ status: 'cancelled', attempt: 1, cancel_requested_at: seen[1] });
    expect(await store.get('acme', traceId)).toEqual(final?.record);
  });

  it("a change that would write another task's record is refused", async () => {
    const store = new TaskStatusStore(buckets.tasks);
    const traceId = 'a'.repeat(32);
    await store.create(record(traceId, 'acme'));
    await expect(
      store.update('acme', traceId, (current) => ({ ...current!, account_id: 'globex' })),
    ).rejects.toThrow(/another task/);
  });
});

describe('idempotency and api keys', () => {
  const request = { workflow_id: 'w', user_id: 'u', messages: [{ role: 'user', content: 'hi' }] };

  it('the same key from the same account returns the first trace id; another account claims its own', async () => {
    const store = new IdempotencyStore(buckets.idempotency, digestKey);
    expect(await store.claim('acme', 'order-42', 'c'.repeat(32), request)).toEqual({
      traceId: 'c'.repeat(32),
      claimed: true,
      sameRequest: true,
    });
    expect(await store.claim('acme', 'order-42', 'd'.repeat(32), request)).toEqual({
      traceId: 'c'.repeat(32),
      claimed: false,
      sameRequest: true,
    });
    expect(await store.claim('beta', 'order-42', 'e'.repeat(32), request)).toEqual({
      traceId: 'e'.repeat(32),
      claimed: true,
      sameRequest: true,
    });
  });

  it('a repeat with the same request in another key order is the same request; one with another request is not', async () => {
    const store = new IdempotencyStore(buckets.idempotency, digestKey);
    await store.claim('acme', 'order-43', 'a'.repeat(32), request);
    const reordered = { messages: request.messages, user_id: 'u', workflow_id: 'w', variables: undefined };
    expect(await store.claim('acme', 'order-43', 'b'.repeat(32), reordered)).toMatchObject({
      traceId: 'a'.repeat(32),
      sameRequest: true,
    });
    const other = { ...request, messages: [{ role: 'user', content: 'something else' }] };
    expect(await store.claim('acme', 'order-43', 'b'.repeat(32), other)).toEqual({
      traceId: 'a'.repeat(32),
      claimed: false,
      sameRequest: false,
    });
  });

  it('the entry holds the trace id and a digest of the request, never the request itself', async () => {
    const store = new IdempotencyStore(buckets.idempotency, digestKey);
    await store.claim('acme', 'order-44', 'f'.repeat(32), {
      ...request,
      variables: { secret: 'canary-7731' },
    });
    const keys = await collect(await buckets.idempotency.keys('acme.>'));
    const values = await Promise.all(keys.map(async (key) => (await buckets.idempotency.get(key))!.string()));
    const entry = values.map((value) => JSON.parse(value)).find((value) => value.trace_id === 'f'.repeat(32));
    expect(entry).toEqual({
      trace_id: 'f'.repeat(32),
      request_digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    for (const value of values) expect(value).not.toContain('canary-7731');
    // Keyed: the digest cannot be recomputed, and so a secret in the request not guessed, without the key.
    const unkeyed = createHash('sha256')
      .update(canonicalJson({ ...request, variables: { secret: 'canary-7731' } }))
      .digest('hex');
    expect(entry.request_digest).not.toBe(unkeyed);
  });

  it('an entry written before digests were kept (the bare trace id) answers any repeat as the same request', async () => {
    const store = new IdempotencyStore(buckets.idempotency, digestKey);
    await store.claim('legacy', 'order-1', '1'.repeat(32), request);
    const [key] = await collect(await buckets.idempotency.keys('legacy.>'));
    await buckets.idempotency.put(key!, '2'.repeat(32));
    expect(await store.claim('legacy', 'order-1', '3'.repeat(32), { anything: 'else' })).toEqual({
      traceId: '2'.repeat(32),
      claimed: false,
      sameRequest: true,
    });
  });

  it('api keys are stored as digests and map to their account', async () => {
    const store = new ApiKeyStore(buckets.apiKeys);
    await store.put('am_live_canary_123', { account_id: 'acme' });
    expect(await store.lookup('am_live_canary_123')).toMatchObject({
      account_id: 'acme',
      account_type: 'user',
    });
    expect(await store.lookup('wrong')).toBeUndefined();
    for await (const key of await buckets.apiKeys.keys()) expect(key).not.toContain('canary');
  });
});

/** The base URL of an agent's first model. */
function baseUrlOf(agent: AgentDefinition | undefined): string | undefined {
  return agent === undefined ? undefined : agentModels(agent)[0]?.base_url;
}
