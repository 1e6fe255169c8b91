import { describe, expect, it } from 'vitest';
import { natsServerArgs } from './nats-server-args.js';
import { resolveNatsSettings } from './nats-settings.js';

describe('NATS settings', () => {
  it('defaults to a container from the official image', () => {
    expect(resolveNatsSettings({}, {})).toMatchObject({
      mode: 'container',
      image: 'nats:2.10',
      modeSource: 'default',
    });
  });

  it('takes image and mode from the environment, options winning', () => {
    const env = { AGENTMESH_NATS_IMAGE: 'local/nats:1', AGENTMESH_NATS_MODE: 'process' };
    expect(resolveNatsSettings({}, env)).toMatchObject({
      mode: 'process',
      image: 'local/nats:1',
      modeSource: 'environment',
    });
    expect(resolveNatsSettings({ mode: 'container' }, env)).toMatchObject({
      mode: 'container',
      modeSource: 'option',
    });
  });

  it('when the mode variable holds something else, fails naming the allowed values', () => {
    expect(() => resolveNatsSettings({}, { AGENTMESH_NATS_MODE: 'docker' })).toThrow(
      /"container" or "process"/,
    );
  });
});

describe('nats-server arguments', () => {
  it('bind loopback and route a cluster member to its peers', () => {
    const args = natsServerArgs({
      name: 'c-1',
      ports: { client: 4001, cluster: 6001, monitor: 8001 },
      jetstream: true,
      cluster: { name: 'c', peerRoutePorts: [6002, 6003] },
    });
    expect(args.join(' ')).toBe(
      '-a 127.0.0.1 -p 4001 -n c-1 -m 8001 -js --cluster_name c --cluster nats://127.0.0.1:6001 ' +
        '--routes nats://127.0.0.1:6002,nats://127.0.0.1:6003',
    );
  });
});
