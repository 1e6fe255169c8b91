import Docker from 'dockerode';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startNats, type NatsServer } from './start-nats.js';

describe('startNats', () => {
  let nats: NatsServer;
  const announced: string[] = [];
  const connections: NatsConnection[] = [];

  beforeAll(async () => {
    const write = process.stderr.write.bind(process.stderr);
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk, ...rest) => {
      announced.push(String(chunk));
      return write(chunk, ...(rest as []));
    });
    try {
      nats = await startNats();
    } finally {
      spy.mockRestore();
    }
  });

  afterAll(async () => {
    await Promise.allSettled(connections.map((nc) => nc.close()));
    await nats?.stop();
  });

  async function client(): Promise<NatsConnection> {
    const nc = await connect({ servers: nats.url });
    connections.push(nc);
    return nc;
  }

  it('runs in a container from $AGENTMESH_NATS_IMAGE on the host network, and says so on stderr', async () => {
    expect(nats.url).toBe(`nats://127.0.0.1:${nats.port}`);
    if (nats.mode === 'container') {
      const expectedImage = process.env['AGENTMESH_NATS_IMAGE'] ?? 'nats:2.10';
      const info = await new Docker().getContainer(nats.containerId ?? '').inspect();
      expect(info.State.Running).toBe(true);
      expect(info.Config.Image).toBe(expectedImage);
      expect(info.HostConfig.NetworkMode).toBe('host');
      expect(info.Config.Cmd).toEqual(
        expect.arrayContaining(['-a', '127.0.0.1', '-p', String(nats.port), '-js']),
      );
      expect(announced.join('')).toContain(
        `[testkit] NATS container ${info.Id.slice(0, 12)} started from image ${expectedImage} on ${nats.url}`,
      );
    } else {
      expect(nats.pid).toBeGreaterThan(0);
      expect(announced.join('')).toContain(`[testkit] NATS process mode`);
    }
  });

  it('when a message is published to a stream, a durable consumer receives it and its ack is recorded', async () => {
    const nc = await client();
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'ORDERS', subjects: ['orders.>'] });
    await jsm.consumers.add('ORDERS', { durable_name: 'billing', ack_policy: AckPolicy.Explicit });

    const js = jetstream(nc);
    const ack = await js.publish('orders.created', JSON.stringify({ id: 42 }));
    expect(ack.stream).toBe('ORDERS');
    expect(ack.seq).toBe(1);

    const consumer = await js.consumers.get('ORDERS', 'billing');
    const message = await consumer.next({ expires: 5_000 });
    expect(message?.subject).toBe('orders.created');
    expect(message?.json()).toEqual({ id: 42 });
    await message?.ackAck();

    const info = await jsm.consumers.info('ORDERS', 'billing');
    expect(info.num_ack_pending).toBe(0);
    expect(info.ack_floor.stream_seq).toBe(1);
  });

  it('when the server is killed and restarted, it comes back on the same port with its stream data', async () => {
    const nc = await client();
    const js = jetstream(nc);
    await js.publish('orders.paid', 'paid-before-kill');

    await nats.kill();
    await nats.restart();

    const fresh = await client();
    const jsm = await jetstreamManager(fresh);
    const last = await jsm.streams.getMessage('ORDERS', { last_by_subj: 'orders.paid' });
    expect(last?.string()).toBe('paid-before-kill');
  });
});
