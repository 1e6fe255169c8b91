// The approval-timeout watch on a real NATS server that restarts under it: approvals parked once the
// connection is back still expire on time (the KV watch's ordered consumer carries on after a reconnect;
// an earlier note feared it would wait for missed heartbeats, 30 s or more).
import { ensureMeshStreams, openMeshBuckets, ParkedTaskStore } from '@agentmesh/bus';
import { ApprovalState, newTraceId } from '@agentmesh/protocol';
import { parkedTaskFixture, startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalTimeouts } from './approval-timeouts.js';

const ACCOUNT = 'acme';

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let store: ParkedTaskStore;

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  js = jetstream(client);
  await ensureMeshStreams(await jetstreamManager(client));
  store = new ParkedTaskStore((await openMeshBuckets(js, { only: ['parkedTasks'] })).parkedTasks);
});

afterAll(async () => {
  await client?.close();
  await nats?.stop();
});

describe('the approval-timeout watch', () => {
  it('after NATS restarts, an approval parked once the connection is back expires when it is due, not once missed heartbeats reveal the restart', async () => {
    const reconnected = (async () => {
      for await (const status of client.status()) if (status.type === 'reconnect') return;
    })();
    const timeouts = await ApprovalTimeouts.start({
      store,
      js,
      log: pino({ level: process.env.TEST_LOG ?? 'silent' }),
      requeueGraceMs: 60_000,
    });
    try {
      await nats.restart();
      await reconnected;
      const traceId = newTraceId();
      await store.park(parkedTaskFixture({ traceId, accountId: ACCOUNT, callIds: ['call_1'], ttlMs: 500 }));

      const expired = await waitFor(
        async () => {
          const entry = await store.get(ACCOUNT, traceId);
          return entry?.parked.approvals[0]?.state === ApprovalState.EXPIRED && entry;
        },
        { timeoutMs: 10_000, intervalMs: 100, description: 'the approval to expire' },
      );
      expect(expired.parked.resumed_at).toBeDefined();
    } finally {
      timeouts.stop();
    }
  });
});
