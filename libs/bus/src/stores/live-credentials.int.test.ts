import { randomBytes } from 'node:crypto';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CredentialStore } from './credential-store.js';
import { LiveCredentials } from './live-credentials.js';
import type { MirrorEvent } from './kv-mirror.js';
import { faultyKv } from './__fixtures__/kv-faults.js';

const master = { kid: 'm1', key: randomBytes(32).toString('base64') };
const canary = 'canary-live-cred-61f0ab';
let nats: NatsServer;
let nc: NatsConnection;
let bucketCount = 0;
const started: LiveCredentials[] = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const live of started) live.stop();
  await nc?.close();
  await nats?.stop();
});

async function startLive(options: Parameters<typeof LiveCredentials.start>[0]): Promise<LiveCredentials> {
  const live = await LiveCredentials.start(options);
  started.push(live);
  return live;
}

async function freshBucket(): Promise<KV> {
  return new Kvm(jetstream(nc)).create(`credentials_test_${++bucketCount}`);
}

describe('live credentials', () => {
  it("resolves what the credential store wrote, without reading KV, and never another user's or account's", async () => {
    const kv = await freshBucket();
    const store = new CredentialStore(kv, { current: master });
    await store.put('acme', 'user@example.com', 'QCC_KEY', canary);
    await store.put('acme', 'other-user', 'QCC_SECRET', 'not-yours');
    await store.put('globex', 'user@example.com', 'QCC_SECRET', 'not-yours-either');
    const faults = faultyKv(kv);
    const events: MirrorEvent[] = [];
    const live = await startLive({
      kv: faults.kv,
      keys: { current: master },
      maxEntries: 100,
      onEvent: (event) => events.push(event),
    });

    expect(await live.resolve('acme', 'user@example.com', ['QCC_KEY'])).toEqual({
      values: { QCC_KEY: canary },
      missing: [],
    });
    expect(faults.reads()).toBe(0);
    expect(await live.resolve('acme', 'user@example.com', ['QCC_KEY', 'QCC_SECRET'])).toEqual({
      values: { QCC_KEY: canary },
      missing: ['QCC_SECRET'],
    });
    // A name the mirror lacks is read once in each set (the user's, the account's) before it counts as missing.
    expect(faults.reads()).toBe(2);
    expect(JSON.stringify(events)).not.toContain(canary);
  });

  it("an account-wide credential serves a user without one of their own, from memory; the user's own wins; another account's users get nothing", async () => {
    const kv = await freshBucket();
    const store = new CredentialStore(kv, { current: master });
    await store.putAccountCredential('acme', 'MODEL_KEY', canary);
    await store.putAccountCredential('acme', 'SEARCH_KEY', 'account-search');
    await store.put('acme', 'picky-user', 'SEARCH_KEY', 'own-search');
    const faults = faultyKv(kv);
    const live = await startLive({ kv: faults.kv, keys: { current: master }, maxEntries: 100 });

    expect(await live.resolve('acme', 'anyone', ['MODEL_KEY', 'SEARCH_KEY'])).toEqual({
      values: { MODEL_KEY: canary, SEARCH_KEY: 'account-search' },
      missing: [],
    });
    expect(await live.resolve('acme', 'picky-user', ['MODEL_KEY', 'SEARCH_KEY'])).toEqual({
      values: { MODEL_KEY: canary, SEARCH_KEY: 'own-search' },
      missing: [],
    });
    expect(faults.reads()).toBe(0);
    expect(await live.resolve('globex', 'anyone', ['MODEL_KEY'])).toEqual({
      values: {},
      missing: ['MODEL_KEY'],
    });

    await store.delete('acme', 'picky-user', 'SEARCH_KEY');
    await waitFor(
      async () =>
        (await live.resolve('acme', 'picky-user', ['SEARCH_KEY'])).values.SEARCH_KEY === 'account-search',
    );
    await store.deleteAccountCredential('acme', 'MODEL_KEY');
    await waitFor(async () => (await live.resolve('acme', 'anyone', ['MODEL_KEY'])).missing.length === 1);
  });

  it('an account-wide credential stored a moment before the task is found though the watch has not delivered it', async () => {
    const kv = await freshBucket();
    const faults = faultyKv(kv);
    const live = await startLive({ kv: faults.kv, keys: { current: master }, maxEntries: 100 });
    faults.hold();

    await new CredentialStore(kv, { current: master }).putAccountCredential('acme', 'NEW_KEY', canary);

    expect(await live.resolve('acme', 'u1', ['NEW_KEY'])).toEqual({
      values: { NEW_KEY: canary },
      missing: [],
    });
    faults.release();
  });

  it('a credential changed or deleted after start is what the next task gets', async () => {
    const kv = await freshBucket();
    const store = new CredentialStore(kv, { current: master });
    await store.put('acme', 'u1', 'KEY', 'first');
    const live = await startLive({ kv, keys: { current: master }, maxEntries: 100 });

    await store.put('acme', 'u1', 'KEY', 'second');
    await waitFor(async () => (await live.resolve('acme', 'u1', ['KEY'])).values.KEY === 'second');
    await store.delete('acme', 'u1', 'KEY');
    await waitFor(async () => (await live.resolve('acme', 'u1', ['KEY'])).missing.length === 1);
  });

  it('a credential stored a moment before the task is found though the watch has not delivered it', async () => {
    const kv = await freshBucket();
    const faults = faultyKv(kv);
    const live = await startLive({ kv: faults.kv, keys: { current: master }, maxEntries: 100 });
    faults.hold();

    await new CredentialStore(kv, { current: master }).put('acme', 'u1', 'NEW_KEY', canary);

    expect(await live.resolve('acme', 'u1', ['NEW_KEY'])).toEqual({
      values: { NEW_KEY: canary },
      missing: [],
    });
    faults.release();
  });
});
