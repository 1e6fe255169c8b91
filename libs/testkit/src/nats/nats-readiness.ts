/**
 * "Ready" as a client sees it: a real NATS connection succeeds and, with JetStream, the JetStream API
 * answers; for a cluster, every member agrees on one JetStream meta leader and sees all members.
 * "Server is ready" in the log only says the listeners are open.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NodeConnectionOptions } from '@nats-io/transport-node';
import { waitFor } from '../wait-for.js';

/** How a client logs in to a server that needs it (user and password, TLS, its inbox prefix, …). */
export type NatsClientOptions = Omit<NodeConnectionOptions, 'servers' | 'port'>;

export async function waitForNatsReady(
  url: string,
  jetstream: boolean,
  timeoutMs: number,
  client: NatsClientOptions = {},
): Promise<void> {
  await waitFor(
    async () => {
      const nc = await connect({ ...client, servers: url, reconnect: false, timeout: 2_000 });
      try {
        if (jetstream) {
          const jsm = await jetstreamManager(nc, { timeout: 2_000 });
          await jsm.getAccountInfo();
        } else {
          await nc.flush();
        }
        return true;
      } finally {
        await nc.close();
      }
    },
    {
      timeoutMs,
      intervalMs: 100,
      description: `NATS at ${url} to accept a client${jetstream ? ' and answer the JetStream API' : ''}`,
    },
  );
}

interface JszMetaCluster {
  meta_cluster?: { leader?: string; cluster_size?: number };
}

export interface ClusterMember {
  name: string;
  monitorUrl: string;
}

/**
 * Resolves with the meta leader's server name once every given member reports the same leader, that
 * leader is one of them (right after a leader dies the others still name it for a while) and each
 * member knows the whole cluster.
 */
export async function waitForMetaLeader(
  members: readonly ClusterMember[],
  clusterSize: number,
  timeoutMs: number,
): Promise<string> {
  const names = new Set(members.map((member) => member.name));
  return waitFor(
    async () => {
      const views = await Promise.all(members.map((member) => readMetaCluster(member.monitorUrl)));
      const leaders = new Set(views.map((view) => view?.leader ?? ''));
      const [leader] = leaders;
      const everyoneSeesAll = views.every((view) => view?.cluster_size === clusterSize);
      return leaders.size === 1 && leader && names.has(leader) && everyoneSeesAll ? leader : undefined;
    },
    {
      timeoutMs,
      intervalMs: 100,
      description: `a JetStream meta leader agreed by ${[...names].join(', ')}`,
    },
  );
}

async function readMetaCluster(monitorUrl: string): Promise<JszMetaCluster['meta_cluster']> {
  const response = await fetch(`${monitorUrl}/jsz`, { signal: AbortSignal.timeout(2_000) });
  if (!response.ok) throw new Error(`${monitorUrl}/jsz answered ${response.status}`);
  const body = (await response.json()) as JszMetaCluster;
  return body.meta_cluster;
}
