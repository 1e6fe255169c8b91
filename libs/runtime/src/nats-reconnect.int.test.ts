/**
 * A service's NATS connection through an outage longer than nats.js would wait by default (10 attempts,
 * then the connection closes for good): it keeps trying and is back once the server is.
 */
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseConfigSchema, loadConfig } from './config.js';
import { connectNats } from './nats-connection.js';

/** nats.js closes a connection after this many failed reconnect attempts unless told otherwise. */
const NATS_JS_DEFAULT_RECONNECT_ATTEMPTS = 10;

let nats: NatsServer;
let nc: NatsConnection | undefined;

beforeAll(async () => {
  nats = await startNats();
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe('a service connection through a NATS outage', () => {
  it('when NATS stays away for more reconnect attempts than nats.js allows by default, the connection keeps trying and works again once NATS is back', async () => {
    const connection = await connectNats({
      settings: loadConfig(baseConfigSchema, { NATS_URL: nats.url }),
      name: 'reconnect-test',
    });
    nc = connection;
    let attempts = 0;
    let reconnected = false;
    let closed = false;
    void connection.closed().then(() => (closed = true));
    void (async () => {
      for await (const status of connection.status()) {
        if (status.type === 'reconnecting') attempts++;
        if (status.type === 'reconnect') reconnected = true;
      }
    })();

    await nats.kill();
    await waitFor(() => attempts > NATS_JS_DEFAULT_RECONNECT_ATTEMPTS + 2 || closed, {
      timeoutMs: 30_000,
      description: 'more reconnect attempts than the nats.js default',
    });
    expect(closed).toBe(false);
    await nats.restart();
    await waitFor(() => reconnected || closed, { timeoutMs: 30_000, description: 'the reconnect' });

    expect(closed).toBe(false);
    const rtt = await connection.rtt();
    expect(rtt).toBeGreaterThanOrEqual(0);
  });
});
