import { AccountUsageStore, openMeshBuckets, type TaskUsage } from '@agentmesh/bus';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountUsageBatcher } from './account-usage-batcher.js';

let nats: NatsServer;
let nc: NatsConnection;
let store: AccountUsageStore;

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  store = new AccountUsageStore(
    (await openMeshBuckets(jetstream(nc), { only: ['accountUsage'] })).accountUsage,
  );
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** The real store, counting its writes; `failures` of them are refused first. */
function countingStore(failures = 0) {
  const counted = {
    writes: 0,
    refused: 0,
    add: async (accountId: string, day: string, usage: TaskUsage) => {
      counted.writes++;
      if (counted.refused < failures) {
        counted.refused++;
        throw new Error('NATS is away');
      }
      return store.add(accountId, day, usage);
    },
  };
  return counted;
}

describe('AccountUsageBatcher', () => {
  it('when 64 tasks of one account end at once, their usage is one write per account and day, and the day counts every task', async () => {
    const counted = countingStore();
    const errors: unknown[] = [];
    const batcher = new AccountUsageBatcher({
      store: counted,
      flushMs: 60_000,
      onError: (e) => errors.push(e),
    });
    await Promise.all(
      Array.from({ length: 64 }, () =>
        batcher.add('batch-a', '2026-11-24', { totalTokens: 10, costUsd: 0.001 }),
      ),
    );
    await batcher.add('batch-b', '2026-11-24', { totalTokens: 7, costUsd: 0 });
    await batcher.stop();

    expect(errors).toEqual([]);
    expect(counted.writes).toBe(2);
    expect(await store.get('batch-a', '2026-11-24')).toMatchObject({ total_tokens: 640, tasks: 64 });
    expect((await store.get('batch-a', '2026-11-24')).cost_usd).toBeCloseTo(0.064, 9);
    expect(await store.get('batch-b', '2026-11-24')).toMatchObject({ total_tokens: 7, tasks: 1 });
  });

  it('a batch whose write is refused is kept and added at the next flush, once', async () => {
    const counted = countingStore(1);
    const errors: unknown[] = [];
    const batcher = new AccountUsageBatcher({
      store: counted,
      flushMs: 60_000,
      onError: (e) => errors.push(e),
    });
    await batcher.add('batch-c', '2026-11-24', { totalTokens: 5, costUsd: 0 });
    await batcher.flush();
    expect(errors).toHaveLength(1);
    expect((await store.get('batch-c', '2026-11-24')).tasks).toBe(0);

    await batcher.add('batch-c', '2026-11-24', { totalTokens: 3, costUsd: 0 });
    await batcher.stop();
    expect(await store.get('batch-c', '2026-11-24')).toMatchObject({ total_tokens: 8, tasks: 2 });
    expect(counted.writes).toBe(2);
  });
});
