/**
 * NATS connection for services: reconnects forever (a service outlives NATS restarts) and waits for the
 * first connection instead of failing start-up when NATS comes up a little later than the service.
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';

export interface NatsConnectionOptions {
  /** One URL or a comma-separated list (cluster seeds). */
  url: string;
  /** Connection name shown in NATS monitoring, e.g. `gateway`. */
  name: string;
}

export async function connectNats({ url, name }: NatsConnectionOptions): Promise<NatsConnection> {
  return connect({
    servers: url
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    waitOnFirstConnect: true,
  });
}
