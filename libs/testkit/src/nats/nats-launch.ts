/**
 * Starts a nats-server in the configured runtime, retrying with fresh ports when a port chosen as
 * free was taken before the server could bind it.
 */
import { startNatsContainer } from './nats-container.js';
import { startNatsProcess } from './nats-process.js';
import { NatsStartupError, type NatsRuntime, type NatsRuntimeSpec } from './nats-runtime.js';
import type { NatsSettings } from './nats-settings.js';

const PORT_ATTEMPTS = 3;

export function startNatsRuntime(settings: NatsSettings, spec: NatsRuntimeSpec): Promise<NatsRuntime> {
  return settings.mode === 'container'
    ? startNatsContainer(settings.image, spec)
    : startNatsProcess(settings.binary, spec);
}

/** Runs `attempt` (which picks its own ports) again while it fails on a port conflict. */
export async function withFreshPortsOnConflict<T>(attempt: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round += 1) {
    try {
      return await attempt();
    } catch (error) {
      const conflict = error instanceof NatsStartupError && error.portConflict;
      if (!conflict || round >= PORT_ATTEMPTS) throw error;
    }
  }
}
