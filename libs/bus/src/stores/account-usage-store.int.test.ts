import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openMeshBuckets } from '../resources.js';
import { AccountUsageStore } from './account-usage-store.js';

let nats: NatsServer;
let nc: NatsConnection;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe("accounts' daily usage store", () => {
  it('when five executors add tasks of one account at once, the day holds every addition; other days and accounts stay apart', async () => {
    const { accountUsage } = await openMeshBuckets(jetstream(nc), { only: ['accountUsage'] });
    const stores = await Promise.all(
      Array.from({ length: 5 }, async () => {
        // Each its own connection, like five executors.
        const own = await connect({ servers: nats.url });
        return {
          own,
          store: new AccountUsageStore(await new Kvm(jetstream(own)).open('mesh_account_usage')),
        };
      }),
    );
    try {
      await Promise.all(
        stores.map(({ store }, index) =>
          store.add('acme', '2026-11-24', { totalTokens: 100 * (index + 1), costUsd: 0.1 }),
        ),
      );
      await stores[0]!.store.add('acme', '2026-11-25', { totalTokens: 7, costUsd: 0 });
      const reader = new AccountUsageStore(accountUsage);
      expect(await reader.get('acme', '2026-11-24')).toEqual({
        account_id: 'acme',
        day: '2026-11-24',
        total_tokens: 1500,
        cost_usd: 0.5,
        tasks: 5,
      });
      expect((await reader.get('acme', '2026-11-25')).total_tokens).toBe(7);
      expect(await reader.get('other', '2026-11-24')).toMatchObject({
        total_tokens: 0,
        cost_usd: 0,
        tasks: 0,
      });
    } finally {
      await Promise.all(stores.map(({ own }) => own.close()));
    }
  });

  it('the bucket forgets a day two days after its last write', async () => {
    const { accountUsage } = await openMeshBuckets(jetstream(nc), { only: ['accountUsage'] });
    expect((await accountUsage.status()).ttl).toBe(2 * 24 * 60 * 60 * 1000);
  });
});
