/**
 * Command-line arguments for nats-server, shared by the container and the process runtimes so both
 * run the very same server configuration. Everything binds to 127.0.0.1: the machines have no other
 * network, and a test server must never be reachable from outside.
 */
export const LOOPBACK = '127.0.0.1';

export interface NatsServerPorts {
  client: number;
  /** Cluster route listener; only for cluster members. */
  cluster?: number;
  /** HTTP monitoring (`/varz`, `/jsz`, `/healthz`). */
  monitor?: number;
}

export interface NatsServerArgsSpec {
  name: string;
  ports: NatsServerPorts;
  jetstream: boolean;
  /** Cluster membership: the cluster's name and the route ports of the other members. */
  cluster?: { name: string; peerRoutePorts: readonly number[] };
  extraArgs?: readonly string[];
}

/** Arguments without the store directory, which each runtime chooses (`--store_dir`). */
export function natsServerArgs(spec: NatsServerArgsSpec): string[] {
  const args = ['-a', LOOPBACK, '-p', String(spec.ports.client), '-n', spec.name];
  if (spec.ports.monitor !== undefined) args.push('-m', String(spec.ports.monitor));
  if (spec.jetstream) args.push('-js');
  if (spec.cluster) {
    if (spec.ports.cluster === undefined) throw new Error('a cluster member needs a cluster port');
    args.push(
      '--cluster_name',
      spec.cluster.name,
      '--cluster',
      `nats://${LOOPBACK}:${spec.ports.cluster}`,
      '--routes',
      spec.cluster.peerRoutePorts.map((port) => `nats://${LOOPBACK}:${port}`).join(','),
    );
  }
  args.push(...(spec.extraArgs ?? []));
  return args;
}

export function natsUrl(port: number): string {
  return `nats://${LOOPBACK}:${port}`;
}
