/**
 * One NATS server for a test file: a container from $AGENTMESH_NATS_IMAGE (default the official
 * image) on the host network, bound to 127.0.0.1 on free ports, JetStream on by default. Resolves
 * once a client can use it; `stop()` removes everything it started.
 */
import { findFreePorts } from '../free-ports.js';
import { announceNatsServer } from './announce.js';
import { startNatsRuntime, withFreshPortsOnConflict } from './nats-launch.js';
import { waitForNatsReady, type NatsClientOptions } from './nats-readiness.js';
import type { NatsServerConfig } from './nats-runtime.js';
import { natsServerControls, type NatsServerControls } from './nats-server-handle.js';
import { natsServerArgs } from './nats-server-args.js';
import { resolveNatsSettings, type NatsMode } from './nats-settings.js';

export interface StartNatsOptions {
  /** Default true. */
  jetstream?: boolean;
  /** Extra nats-server arguments, appended after the test kit's own. */
  args?: readonly string[];
  /** Default: $AGENTMESH_NATS_MODE, else `container`. */
  mode?: NatsMode;
  /** Default: $AGENTMESH_NATS_IMAGE, else `nats:2.10`. */
  image?: string;
  /** Server name (`-n`). Default `testkit-nats`. */
  name?: string;
  /** Bound on start-up and on each restart. Default 60 000 ms. */
  startupTimeoutMs?: number;
  /**
   * A configuration file to load (accounts, permissions, TLS, …) and the environment its `$VARIABLES`
   * come from; the test kit's address, ports, name and store still apply.
   */
  config?: NatsServerConfig;
  /** How the readiness check (and restarts') log in when the configuration demands it. */
  client?: NatsClientOptions;
  /** Keep every line the server logs for {@link NatsServer.log} (default: the last 40). */
  keepLog?: boolean;
}

export interface NatsServer extends NatsServerControls {
  /** Stops the server and removes its container (or process and temp store). Idempotent. */
  stop(): Promise<void>;
  /** The lines the server logged so far: all of them with `keepLog`, else the last 40. */
  log(): string[];
}

export async function startNats(options: StartNatsOptions = {}): Promise<NatsServer> {
  const settings = resolveNatsSettings(options);
  const jetstream = options.jetstream ?? true;
  const name = options.name ?? 'testkit-nats';
  const startupTimeoutMs = options.startupTimeoutMs ?? 60_000;

  const { runtime, port, monitorPort } = await withFreshPortsOnConflict(async () => {
    const [port, monitorPort] = (await findFreePorts(2)) as [number, number];
    const args = natsServerArgs({
      name,
      ports: { client: port, monitor: monitorPort },
      jetstream,
      extraArgs: options.args ?? [],
    });
    const runtime = await startNatsRuntime(settings, {
      name,
      args,
      jetstream,
      startupTimeoutMs,
      ...(options.config ? { config: options.config } : {}),
      ...(options.keepLog ? { logLines: Infinity } : {}),
    });
    return { runtime, port, monitorPort };
  });

  const controls = natsServerControls(runtime, {
    name,
    port,
    monitorPort,
    jetstream,
    image: settings.image,
    readyTimeoutMs: startupTimeoutMs,
    ...(options.client ? { client: options.client } : {}),
  });
  try {
    await waitForNatsReady(controls.url, jetstream, startupTimeoutMs, options.client);
  } catch (error) {
    await runtime.remove().catch(() => undefined);
    throw error;
  }
  announceNatsServer(runtime, settings, controls.url);
  return Object.assign(controls, { stop: () => runtime.remove(), log: () => runtime.logTail() });
}
