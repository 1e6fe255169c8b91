/**
 * What a service logs while it waits for a JetStream stream or KV bucket that does not exist and that
 * its NATS user may not create (under infra/'s permissions only the provisioner creates them).
 */
import type { Logger } from 'pino';

export interface WaitedResource {
  kind: string;
  name: string;
  /** The resource exists, with the settings of an earlier release this NATS user may not update. */
  outdated?: boolean;
  waitedMs: number;
}

/** An `onWaiting` for @agentmesh/bus's resource openers: one warning line per report, naming the fix. */
export function logWaitingForResource(log: Logger): (missing: WaitedResource) => void {
  return (missing) =>
    log.warn(
      { resource: missing.kind, name: missing.name, waited_ms: missing.waitedMs },
      `waiting for ${missing.kind} ${missing.name}: ` +
        (missing.outdated
          ? 'it has the subjects of an earlier release and this NATS user may not update it; '
          : 'it does not exist and this NATS user may not create it; ') +
        'run the provisioning (node services/gateway/dist/provision.js as the provisioner user, see infra/README.md)',
    );
}
