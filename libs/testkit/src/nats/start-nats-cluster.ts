/**
 * A NATS cluster with JetStream for fault tests: N servers (3 by default) on loopback, each with its
 * own client, route and monitor ports, routed to each other. Resolves once all members agree on a
 * JetStream meta leader and each answers the JetStream API, so an R3 stream can be created at once.
 */
import { findFreePorts } from '../free-ports.js';
import { announceNatsServer } from './announce.js';
import { startNatsRuntime, withFreshPortsOnConflict } from './nats-launch.js';
import { waitForMetaLeader, waitForNatsReady } from './nats-readiness.js';
import { NatsStartupError, type NatsRuntime } from './nats-runtime.js';
import { natsServerControls, type NatsServerControls } from './nats-server-handle.js';
import { natsServerArgs } from './nats-server-args.js';
import { resolveNatsSettings, type NatsMode } from './nats-settings.js';

export interface StartNatsClusterOptions {
  /** Default: $AGENTMESH_NATS_MODE, else `container`. */
  mode?: NatsMode;
  /** Default: $AGENTMESH_NATS_IMAGE, else `nats:2.10`. */
  image?: string;
  /** Cluster name; members are named `<name>-1` … Default `testkit`. */
  name?: string;
  /** Extra nats-server arguments for every member. */
  args?: readonly string[];
  /** Bound on start-up (including meta leader election) and on each restart. Default 90 000 ms. */
  startupTimeoutMs?: number;
}

export interface NatsClusterNode extends NatsServerControls {
  /** Route listener port of this member. */
  readonly clusterPort: number;
  /** Graceful shutdown (SIGTERM) keeping the store; {@link NatsServerControls.restart} brings it back. */
  stop(): Promise<void>;
}

export interface NatsCluster {
  readonly name: string;
  /** Client URL of every member, in node order (pass them all as seeds). */
  readonly urls: string[];
  readonly nodes: NatsClusterNode[];
  /**
   * Resolves with the meta leader's name once every member that answers agrees on one of them (a
   * dead or paused member is left out; the survivors must elect among themselves).
   */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  /** Removes every member's container (or process and store). Idempotent; tries all even if one fails. */
  stop(): Promise<void>;
}

interface MemberPorts {
  client: number;
  cluster: number;
  monitor: number;
}

export async function startNatsCluster(
  size = 3,
  options: StartNatsClusterOptions = {},
): Promise<NatsCluster> {
  if (!Number.isInteger(size) || size < 1) {
    throw new RangeError(`startNatsCluster: size must be a positive integer, got ${String(size)}`);
  }
  const settings = resolveNatsSettings(options);
  const clusterName = options.name ?? 'testkit';
  const startupTimeoutMs = options.startupTimeoutMs ?? 90_000;

  const { runtimes, ports } = await withFreshPortsOnConflict(async () => {
    const free = await findFreePorts(size * 3);
    const ports: MemberPorts[] = Array.from({ length: size }, (_, i) => ({
      client: free[i * 3] as number,
      cluster: free[i * 3 + 1] as number,
      monitor: free[i * 3 + 2] as number,
    }));
    const launches = await Promise.allSettled(
      ports.map((own, i) => {
        const name = memberName(clusterName, i);
        const args = natsServerArgs({
          name,
          ports: own,
          jetstream: true,
          cluster: {
            name: clusterName,
            peerRoutePorts: ports.filter((p) => p !== own).map((p) => p.cluster),
          },
          extraArgs: options.args ?? [],
        });
        return startNatsRuntime(settings, { name, args, jetstream: true, startupTimeoutMs });
      }),
    );
    const runtimes = launches.flatMap((launch) => (launch.status === 'fulfilled' ? [launch.value] : []));
    if (runtimes.length < size) {
      await removeAll(runtimes);
      throw pickStartupError(launches);
    }
    return { runtimes, ports };
  });

  const nodes = runtimes.map((runtime, i): NatsClusterNode => {
    const own = ports[i] as MemberPorts;
    const controls = natsServerControls(runtime, {
      name: memberName(clusterName, i),
      port: own.client,
      monitorPort: own.monitor,
      jetstream: true,
      image: settings.image,
      readyTimeoutMs: startupTimeoutMs,
    });
    return Object.assign(controls, { clusterPort: own.cluster, stop: () => runtime.shutdown() });
  });

  try {
    await waitForMetaLeader(nodes, size, startupTimeoutMs);
    await Promise.all(nodes.map((node) => waitForNatsReady(node.url, true, startupTimeoutMs)));
  } catch (error) {
    await removeAll(runtimes);
    throw error;
  }
  nodes.forEach((node, i) =>
    announceNatsServer(
      runtimes[i] as NatsRuntime,
      settings,
      node.url,
      `server ${node.name} of cluster ${clusterName}`,
    ),
  );

  return {
    name: clusterName,
    urls: nodes.map((node) => node.url),
    nodes,
    waitForMetaLeader: async (timeoutMs = startupTimeoutMs) => {
      const running = await answeringMembers(nodes);
      return waitForMetaLeader(running, size, timeoutMs);
    },
    stop: () => removeAll(runtimes),
  };
}

function memberName(clusterName: string, index: number): string {
  return `${clusterName}-${index + 1}`;
}

/** Members whose monitor endpoint answers: stopped or paused members take no part in elections. */
async function answeringMembers(nodes: readonly NatsClusterNode[]): Promise<NatsClusterNode[]> {
  const answering = await Promise.all(
    nodes.map((node) =>
      fetch(`${node.monitorUrl}/healthz`, { signal: AbortSignal.timeout(1_000) }).then(
        () => true,
        () => false,
      ),
    ),
  );
  return nodes.filter((_, i) => answering[i]);
}

async function removeAll(runtimes: readonly NatsRuntime[]): Promise<void> {
  const results = await Promise.allSettled(runtimes.map((runtime) => runtime.remove()));
  const failures = results.flatMap((result) =>
    result.status === 'rejected' ? [result.reason as unknown] : [],
  );
  if (failures.length > 0)
    throw new AggregateError(failures, 'some NATS cluster members could not be removed');
}

/** A port conflict first, so the caller retries with fresh ports. */
function pickStartupError(launches: ReadonlyArray<PromiseSettledResult<NatsRuntime>>): unknown {
  const errors = launches.flatMap((launch) =>
    launch.status === 'rejected' ? [launch.reason as unknown] : [],
  );
  return errors.find((error) => error instanceof NatsStartupError && error.portConflict) ?? errors[0];
}
