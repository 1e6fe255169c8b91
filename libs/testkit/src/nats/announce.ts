/**
 * The one line per NATS server that CI logs show, so a reader can tell which path ran (container
 * from which image, or the process fallback). The test kit's only output.
 */
import type { NatsRuntime } from './nats-runtime.js';
import type { NatsSettings } from './nats-settings.js';

export function announceNatsServer(
  runtime: NatsRuntime,
  settings: NatsSettings,
  url: string,
  role = '',
): void {
  const suffix = role ? ` (${role})` : '';
  const line =
    runtime.mode === 'container'
      ? `[testkit] NATS container ${runtime.id.slice(0, 12)} started from image ${settings.image} on ${url}${suffix}`
      : `[testkit] NATS process mode (${processModeReason(settings)}): nats-server pid ${runtime.pid ?? '?'} ` +
        `from ${settings.binary} on ${url}${suffix}`;
  process.stderr.write(`${line}\n`);
}

function processModeReason(settings: NatsSettings): string {
  return settings.modeSource === 'environment' ? 'AGENTMESH_NATS_MODE=process' : 'mode option "process"';
}
