/**
 * The mesh's streams and buckets on a 3-node JetStream cluster (the test kit's, like
 * infra/nats/cluster): with replicas 3 every one of them is replicated on all three members, whether
 * the provisioning creates it or a service does.
 */
import { Buckets, Streams } from '@agentmesh/protocol';
import { startNatsCluster, waitFor, type NatsCluster } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ensureDeadLetterStream,
  ensureTaskAdvisoryStream,
  ensureThreadStream,
  ensureWebhookStream,
  ensureMeshStreams,
  openBucket,
  openMeshBuckets,
  openNativeProvidersBucket,
  provisionMeshResources,
} from './resources.js';

/** Every stream of the mesh: its three streams and one per KV bucket. */
const MESH_STREAMS = [
  Streams.TASKS.name,
  Streams.EVENTS.name,
  Streams.DEAD_LETTERS.name,
  Streams.TASK_ADVISORIES.name,
  Streams.THREADS.name,
  Streams.WEBHOOKS.name,
  ...Object.values(Buckets).map((bucket) => `KV_${bucket}`),
].sort();

let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  cluster = await startNatsCluster(3);
  nc = await connect({ servers: cluster.urls });
  jsm = await jetstreamManager(nc);
}, 120_000);

afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
});

/** Each stream's configured replicas and how many members hold it (the leader and its peers). */
async function replication(): Promise<Record<string, { configured: number; members: number }>> {
  const byStream: Record<string, { configured: number; members: number }> = {};
  for await (const info of jsm.streams.list()) {
    byStream[info.config.name] = {
      configured: info.config.num_replicas,
      members: (info.cluster?.leader ? 1 : 0) + (info.cluster?.replicas?.length ?? 0),
    };
  }
  return byStream;
}

async function expectEveryStreamOnThreeMembers(): Promise<void> {
  const everywhere = Object.fromEntries(MESH_STREAMS.map((name) => [name, { configured: 3, members: 3 }]));
  // A new stream's leader is elected a moment after it is created.
  await waitFor(async () => JSON.stringify(await replication()) === JSON.stringify(everywhere), {
    timeoutMs: 30_000,
    description: 'every stream to have a leader and two peers',
  }).catch(() => undefined);
  expect(await replication()).toEqual(everywhere);
}

async function deleteEveryStream(): Promise<void> {
  for (const name of MESH_STREAMS) await jsm.streams.delete(name).catch(() => false);
}

describe('the mesh on a 3-node cluster with replicas 3', () => {
  it('the provisioning creates MESH_TASKS, MESH_EVENTS, MESH_DEAD_LETTERS, MESH_TASK_ADVISORIES, MESH_WEBHOOKS and every KV bucket with three replicas, one on each member', async () => {
    const report = await provisionMeshResources(jetstream(nc), { replicas: 3 });

    expect(report.created).toHaveLength(MESH_STREAMS.length);
    await expectEveryStreamOnThreeMembers();
  });

  it('services creating what is missing themselves create it with three replicas too', async () => {
    await deleteEveryStream();
    const js = jetstream(nc);
    await ensureMeshStreams(jsm, { replicas: 3 });
    await ensureDeadLetterStream(jsm, { replicas: 3 });
    await ensureTaskAdvisoryStream(jsm, { replicas: 3 });
    await ensureThreadStream(jsm, { replicas: 3 });
    await ensureWebhookStream(jsm, { replicas: 3 });
    await openMeshBuckets(js, { replicas: 3 });
    await openNativeProvidersBucket(js, { replicas: 3 });
    // As recall opens its caches.
    await openBucket(js, Buckets.RECALL_TOOLS, { ttl: 60_000, replicas: 3 });
    await openBucket(js, Buckets.RECALL_ACTIONS, { ttl: 60_000, replicas: 3 });

    await expectEveryStreamOnThreeMembers();
  });
});
