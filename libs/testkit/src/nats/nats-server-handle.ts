/**
 * The handle tests hold for one NATS server (alone or a cluster member): where to connect and the
 * faults a test can inject. Restarting brings the server back on the same ports with the same store
 * and returns once clients can use it again.
 */
import type { NatsRuntime } from './nats-runtime.js';
import { waitForNatsReady, type NatsClientOptions } from './nats-readiness.js';
import type { NatsMode } from './nats-settings.js';

export interface NatsServerControls {
  readonly name: string;
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** HTTP monitoring endpoint, `http://127.0.0.1:<port>` (`/varz`, `/jsz`, `/healthz`). */
  readonly monitorUrl: string;
  readonly mode: NatsMode;
  /** Docker container id in container mode. */
  readonly containerId: string | undefined;
  /** Image the container runs, in container mode. */
  readonly image: string | undefined;
  /** nats-server process id, in process mode. */
  readonly pid: number | undefined;
  /** SIGKILL: the server dies at once; its store stays for {@link restart}. */
  kill(): Promise<void>;
  /** Freezes the server (docker pause / SIGSTOP): connections stay open, nothing answers. */
  pause(): Promise<void>;
  unpause(): Promise<void>;
  /** Same ports, same store; resolves when a client can connect (and use JetStream when enabled). */
  restart(): Promise<void>;
}

export interface NatsServerControlsSpec {
  name: string;
  port: number;
  monitorPort: number;
  jetstream: boolean;
  image: string;
  readyTimeoutMs: number;
  /** How the readiness check logs in, when the server needs it. */
  client?: NatsClientOptions;
}

export function natsServerControls(runtime: NatsRuntime, spec: NatsServerControlsSpec): NatsServerControls {
  const url = `nats://127.0.0.1:${spec.port}`;
  const inContainer = runtime.mode === 'container';
  return {
    name: spec.name,
    url,
    port: spec.port,
    monitorUrl: `http://127.0.0.1:${spec.monitorPort}`,
    mode: runtime.mode,
    get containerId() {
      return inContainer ? runtime.id : undefined;
    },
    image: inContainer ? spec.image : undefined,
    get pid() {
      return runtime.pid;
    },
    kill: () => runtime.kill(),
    pause: () => runtime.pause(),
    unpause: () => runtime.unpause(),
    restart: async () => {
      await runtime.restart();
      await waitForNatsReady(url, spec.jetstream, spec.readyTimeoutMs, spec.client);
    },
  };
}
