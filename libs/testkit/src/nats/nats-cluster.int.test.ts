import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../wait-for.js';
import { startNatsCluster, type NatsCluster, type NatsClusterNode } from './start-nats-cluster.js';

/** Messages this member stores itself, as its monitor endpoint reports them. */
async function storedMessages(node: NatsClusterNode): Promise<number> {
  const response = await fetch(`${node.monitorUrl}/jsz`, { signal: AbortSignal.timeout(2_000) });
  const body = (await response.json()) as { messages?: number };
  return body.messages ?? 0;
}

describe('startNatsCluster', () => {
  let cluster: NatsCluster;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    cluster = await startNatsCluster(3);
  });

  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await cluster?.stop();
  });

  async function clientOf(urls: string[]): Promise<NatsConnection> {
    const nc = await connect({ servers: urls });
    connections.push(nc);
    return nc;
  }

  it('forms one JetStream cluster of three named members on distinct loopback ports', async () => {
    expect(cluster.nodes.map((node) => node.name)).toEqual(['testkit-1', 'testkit-2', 'testkit-3']);
    const ports = cluster.nodes.flatMap((node) => [
      node.port,
      node.clusterPort,
      new URL(node.monitorUrl).port,
    ]);
    expect(new Set(ports.map(String)).size).toBe(9);
    const leader = await cluster.waitForMetaLeader();
    expect(cluster.nodes.map((node) => node.name)).toContain(leader);
  });

  it('when the stream leader is killed, an R3 stream stays writable and readable from a survivor, and the node rejoins', async () => {
    const nc = await clientOf(cluster.urls);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'EVENTS', subjects: ['events.>'], num_replicas: 3 });
    await jetstream(nc).publish('events.before', 'one');

    const info = await jsm.streams.info('EVENTS');
    const victim = cluster.nodes.find((node) => node.name === info.cluster?.leader);
    expect(victim).toBeDefined();
    await victim?.kill();

    const survivors = cluster.nodes.filter((node) => node !== victim);
    const survivorClient = await clientOf(survivors.map((node) => node.url));
    const js = jetstream(survivorClient, { timeout: 2_000 });
    // A new stream leader must be elected first; publishing fails until then.
    const ack = await waitFor(() => js.publish('events.after-kill', 'two'), {
      timeoutMs: 30_000,
      intervalMs: 250,
      description: 'a publish to EVENTS to succeed after its leader was killed',
    });
    expect(ack.duplicate).toBe(false);

    // The survivors also agree on a meta leader among themselves (the JetStream API needs one).
    const metaLeader = await cluster.waitForMetaLeader(30_000);
    expect(survivors.map((node) => node.name)).toContain(metaLeader);

    const survivorJsm = await jetstreamManager(await clientOf([survivors[0]?.url ?? '']));
    const stored = await survivorJsm.streams.getMessage('EVENTS', { last_by_subj: 'events.after-kill' });
    expect(stored?.string()).toBe('two');

    await victim?.restart();
    // The restarted member catches up on what it missed.
    await waitFor(async () => (victim ? (await storedMessages(victim)) === 2 : false), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `${victim?.name} to store both messages again`,
    });
  });

  it('when a follower is paused, writes go on, and after unpause it catches up', async () => {
    const nc = await clientOf(cluster.urls);
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info('EVENTS');
    const metaLeader = await cluster.waitForMetaLeader();
    // A member that leads neither the stream nor the meta layer: pausing it needs no election.
    const follower = cluster.nodes.find(
      (node) => node.name !== info.cluster?.leader && node.name !== metaLeader,
    );
    expect(follower).toBeDefined();
    const before = info.state.messages;

    await follower?.pause();
    const others = cluster.nodes.filter((node) => node !== follower);
    const js = jetstream(await clientOf(others.map((node) => node.url)), { timeout: 5_000 });
    const ack = await js.publish('events.while-paused', 'three');
    expect(ack.seq).toBe(before + 1);

    await follower?.unpause();
    await waitFor(async () => (follower ? (await storedMessages(follower)) === before + 1 : false), {
      timeoutMs: 30_000,
      intervalMs: 200,
      description: `${follower?.name} to catch up after unpause`,
    });
    const replicas = (await jsm.streams.info('EVENTS')).cluster?.replicas ?? [];
    expect(replicas).toHaveLength(2);
  });
});
