import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNats, type NatsServer } from './start-nats.js';

// The fallback for machines without Docker: the nats-server binary run directly.
describe('startNats in process mode', () => {
  let nats: NatsServer;
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    nats = await startNats({ mode: 'process', name: 'fallback' });
  });

  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await nats?.stop();
  });

  it('runs a local nats-server process with JetStream, which keeps its data across a kill and restart', async () => {
    expect(nats.mode).toBe('process');
    expect(nats.containerId).toBeUndefined();
    const pid = nats.pid ?? 0;
    expect(() => process.kill(pid, 0)).not.toThrow();

    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'LOCAL', subjects: ['local.>'] });
    await jetstream(nc).publish('local.one', 'kept');

    await nats.kill();
    expect(() => process.kill(pid, 0)).toThrow();
    await nats.restart();
    expect(nats.pid).not.toBe(pid);

    const fresh = await connect({ servers: nats.url });
    connections.push(fresh);
    const stored = await (
      await jetstreamManager(fresh)
    ).streams.getMessage('LOCAL', { last_by_subj: 'local.one' });
    expect(stored?.string()).toBe('kept');
  });

  it('when paused, the server does not answer; after unpause it does', async () => {
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    await nats.pause();
    const probe = await connect({ servers: nats.url, timeout: 300, reconnect: false }).then(
      (c) => c.close().then(() => 'connected'),
      () => 'no answer',
    );
    expect(probe).toBe('no answer');
    await nats.unpause();
    await expect(nc.flush()).resolves.toBeUndefined();
  });
});
