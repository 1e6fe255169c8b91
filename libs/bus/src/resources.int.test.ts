/**
 * Provisioning on a real server with users: a service user that may use but not create streams and
 * buckets waits for them (and says so), and the provisioner user creates every one of them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Buckets, Streams } from '@agentmesh/protocol';
import { startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StreamUpdateRefusedError } from './errors.js';
import {
  DEFAULT_DEAD_LETTER_RETENTION_MS,
  DEFAULT_TASK_RETENTION_MS,
  ensureMeshStreams,
  openMeshBuckets,
  provisionMeshResources,
  type MissingResource,
} from './resources.js';

const dir = mkdtempSync(join(tmpdir(), 'bus-provisioning-'));
let nats: NatsServer;
const connections: NatsConnection[] = [];

beforeAll(async () => {
  // `service` may read stream info and use buckets, but never create: `$JS.API.STREAM.CREATE.>` is denied.
  writeFileSync(
    join(dir, 'server.conf'),
    `authorization {
  users: [
    { user: provisioner, password: provisioner-pw, permissions: {
        publish: { allow: ["$JS.API.INFO", "$JS.API.STREAM.INFO.>", "$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>"] }
        subscribe: { allow: ["_INBOX_provisioner.>"] } } }
    { user: operator, password: operator-pw, permissions: {
        publish: { allow: ["$JS.API.>"] }
        subscribe: { allow: ["_INBOX_operator.>"] } } }
    { user: service, password: service-pw, permissions: {
        publish: { allow: ["$JS.API.>", "$KV.>"], deny: ["$JS.API.STREAM.CREATE.>", "$JS.API.STREAM.UPDATE.>"] }
        subscribe: { allow: ["_INBOX_service.>"] } } }
  ]
}
`,
  );
  nats = await startNats({
    config: { dir, file: 'server.conf' },
    client: { user: 'provisioner', pass: 'provisioner-pw', inboxPrefix: '_INBOX_provisioner' },
  });
}, 120_000);

afterAll(async () => {
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function connectAs(user: 'provisioner' | 'service' | 'operator'): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.url, user, pass: `${user}-pw`, inboxPrefix: `_INBOX_${user}` });
  connections.push(nc);
  return nc;
}

describe('provisioning the mesh resources', () => {
  it('when a service may not create a missing stream or bucket, it waits, says what for, and goes on once provisioned', async () => {
    const service = await connectAs('service');
    const waiting: MissingResource[] = [];
    const wait = { onWaiting: (missing: MissingResource) => waiting.push(missing), retryDelayMs: 100 };
    let ready = false;
    const opening = (async () => {
      await ensureMeshStreams(await jetstreamManager(service), {}, wait);
      const buckets = await openMeshBuckets(jetstream(service), { only: ['tasks'] }, wait);
      ready = true;
      return buckets;
    })();

    await waitFor(() => waiting.length > 0, { description: 'a report of the missing resources' });
    expect(waiting[0]).toMatchObject({ kind: 'stream', name: Streams.TASKS.name });
    expect(ready).toBe(false);

    const report = await provisionMeshResources(jetstream(await connectAs('provisioner')));
    const { tasks } = await opening;
    await tasks.put('acme.trace', 'queued');
    expect((await tasks.get('acme.trace'))?.string()).toBe('queued');
    expect(report.created).toEqual(
      expect.arrayContaining([
        `stream ${Streams.TASKS.name}`,
        `stream ${Streams.EVENTS.name}`,
        `stream ${Streams.DEAD_LETTERS.name}`,
        `stream ${Streams.TASK_ADVISORIES.name}`,
        `stream ${Streams.THREADS.name}`,
        `stream ${Streams.WEBHOOKS.name}`,
        ...Object.values(Buckets).map((bucket) => `bucket ${bucket}`),
      ]),
    );
    expect(report.existing).toEqual([]);
  });

  it("a task's status record lives as long as its events (one retention, a day by default), never longer", async () => {
    const jsm = await jetstreamManager(await connectAs('provisioner'));
    const events = await jsm.streams.info(Streams.EVENTS.name);
    const statuses = await jsm.streams.info(`KV_${Buckets.TASKS}`);
    expect(events.config.max_age).toBe(DEFAULT_TASK_RETENTION_MS * 1_000_000);
    expect(statuses.config.max_age).toBe(events.config.max_age);
  });

  it('dead letters are kept 14 days by default, one per task, in a limits stream', async () => {
    const jsm = await jetstreamManager(await connectAs('provisioner'));
    const { config } = await jsm.streams.info(Streams.DEAD_LETTERS.name);
    expect(config.max_age).toBe(DEFAULT_DEAD_LETTER_RETENTION_MS * 1_000_000);
    expect(DEFAULT_DEAD_LETTER_RETENTION_MS).toBe(14 * 24 * 3600 * 1000);
    expect(config.retention).toBe('limits');
    expect(config.max_msgs_per_subject).toBe(1);
  });

  it('when provisioning runs again, everything exists and nothing is created', async () => {
    const again = await provisionMeshResources(jetstream(await connectAs('provisioner')));
    expect(again.created).toEqual([]);
    expect(again.updated).toEqual([]);
    expect(again.existing).toHaveLength(6 + Object.values(Buckets).length);
  });

  it("when MESH_EVENTS has an earlier release's subjects, a service that may not update it waits and says so; the provisioning updates it, or where the server cannot change a republish names the fix; recreated, the service goes on", async () => {
    const operator = await jetstreamManager(await connectAs('operator'));
    const current = await operator.streams.info(Streams.EVENTS.name);
    await operator.streams.delete(Streams.EVENTS.name);
    await operator.streams.add({ ...current.config, subjects: ['mesh.events.>'], republish: undefined });
    const waiting: MissingResource[] = [];
    const opening = ensureMeshStreams(
      await jetstreamManager(await connectAs('service')),
      {},
      { onWaiting: (missing) => waiting.push(missing), retryDelayMs: 100 },
    );
    await waitFor(() => waiting.length > 0, { description: 'a report of the outdated stream' });
    expect(waiting[0]).toMatchObject({ kind: 'stream', name: Streams.EVENTS.name, outdated: true });

    const provisioner = await connectAs('provisioner');
    const [major = 0, minor = 0] = (provisioner.info?.version ?? '0.0').split('.').map(Number);
    if (major === 2 && minor < 10) {
      // nats-server 2.9 refuses to change a stream's republish in place.
      await expect(provisionMeshResources(jetstream(provisioner))).rejects.toBeInstanceOf(
        StreamUpdateRefusedError,
      );
      await operator.streams.delete(Streams.EVENTS.name);
      expect((await provisionMeshResources(jetstream(provisioner))).created).toEqual([
        `stream ${Streams.EVENTS.name}`,
      ]);
    } else {
      expect((await provisionMeshResources(jetstream(provisioner))).updated).toEqual([
        `stream ${Streams.EVENTS.name}`,
      ]);
    }
    await opening;
    const { config } = await operator.streams.info(Streams.EVENTS.name);
    expect(config.subjects).toEqual([...Streams.EVENTS.subjects]);
    expect(config.republish).toMatchObject(Streams.EVENTS.republish);
  });
});
