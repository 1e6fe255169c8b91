/**
 * Checks infra/nats on a real nats-server: accounts.conf loaded by the test kit (its directory copied
 * into the container) with the users' passwords in the server's environment, each user connecting for
 * real; and single-node.conf loading as a whole. Permission refusals are asserted as the
 * PermissionViolationErrors nats.js reports. tests/security runs the whole mesh on these users.
 */
import { cpSync, copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Streams } from '@agentmesh/protocol';
import { AckPolicy, jetstream, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude } from '@nats-io/kv';
import {
  AuthorizationError,
  connect,
  nanos,
  PermissionViolationError,
  type Msg,
} from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectAsInfraUser,
  generateInfraPasswords,
  INFRA_NATS_DIR,
  INFRA_NATS_USERS,
  infraInboxPrefix,
  infraPasswordEnvironment,
  type InfraClient,
  type InfraNatsUser,
} from './nats/infra-users.js';
import { startNats, type NatsServer } from './nats/start-nats.js';
import { waitFor } from './wait-for.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

type User = InfraNatsUser;
const USERS = INFRA_NATS_USERS;
const inboxPrefix = infraInboxPrefix;

type Client = InfraClient;

describe('infra/nats/accounts.conf', () => {
  // Two of them are passwords nats-server would misread if its variables were not quoted.
  const passwords = generateInfraPasswords();
  const clients: Client[] = [];
  let server: NatsServer | undefined;
  let url: string;
  const environment = (): Record<string, string> => infraPasswordEnvironment(passwords);

  beforeAll(async () => {
    server = await startNats({
      name: 'infra-accounts',
      config: { dir: INFRA_NATS_DIR, file: 'accounts.conf', environment: environment() },
      client: { user: 'provisioner', pass: passwords.provisioner, inboxPrefix: inboxPrefix('provisioner') },
    });
    url = server.url;
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map(({ nc }) => nc.close()));
    await server?.stop();
  });

  async function connectAs(user: User): Promise<Client> {
    const client = await connectAsInfraUser(url, user, passwords[user]);
    clients.push(client);
    return client;
  }

  function refusedPublish(client: Client, subject: string): Promise<PermissionViolationError> {
    return waitFor(
      () => client.violations.find((error) => error.operation === 'publish' && error.subject === subject),
      { description: `a publish permission violation on ${subject}` },
    );
  }

  /** Subscribes, makes sure the server has the subscription, and hands back the first message to come. */
  async function subscribeForOne(client: Client, subject: string): Promise<{ message: Promise<Msg> }> {
    const subscription = client.nc.subscribe(subject, { max: 1, timeout: 5_000 });
    await client.nc.flush();
    const message = (async () => {
      for await (const msg of subscription) return msg;
      throw (await subscription.closed) ?? new Error(`subscription to ${subject} ended without a message`);
    })();
    return { message };
  }

  it('when every service, the provisioner, the upstreams and the tenant log in with their passwords, all are admitted', async () => {
    const connected = await Promise.all(USERS.map(async (user) => (await connectAs(user)).nc));
    for (const nc of connected) expect(nc.isClosed()).toBe(false);
  });

  it('when a service logs in with a wrong password, the server refuses it with an authorization error', async () => {
    const attempt = connect({
      servers: url,
      user: 'gateway',
      pass: 'not-the-password',
      maxReconnectAttempts: 0,
    });
    await expect(attempt).rejects.toBeInstanceOf(AuthorizationError);
  });

  it('when the executor stores an event of an acme task, the tenant subscribed to its own events receives it, republished by MESH_EVENTS', async () => {
    const provisioner = await connectAs('provisioner');
    await (
      await jetstreamManager(provisioner.nc)
    ).streams.add({
      name: Streams.EVENTS.name,
      subjects: [...Streams.EVENTS.subjects],
      republish: { ...Streams.EVENTS.republish },
    });
    const tenant = await connectAs('tenant-acme');
    const executor = await connectAs('executor');
    const received = await subscribeForOne(tenant, 'mesh.events.acme.>');

    await jetstream(executor.nc).publish(`mesh.eventlog.acme.${TRACE_ID}`, '{"type":"done"}');

    const msg = await received.message;
    expect(msg.subject).toBe(`mesh.events.acme.${TRACE_ID}`);
    expect(msg.string()).toBe('{"type":"done"}');
    expect(msg.headers?.get('Nats-Subject')).toBe(`mesh.eventlog.acme.${TRACE_ID}`);
    expect(executor.violations).toEqual([]);
  });

  it('when the executor publishes straight onto a followed events subject, the server refuses it', async () => {
    const executor = await connectAs('executor');
    executor.nc.publish(`mesh.events.acme.${TRACE_ID}`, '{"type":"done"}');
    await refusedPublish(executor, `mesh.events.acme.${TRACE_ID}`);
  });

  it("when the tenant subscribes to another account's events, the subscription is closed with a permission violation", async () => {
    const tenant = await connectAs('tenant-acme');
    const subscription = tenant.nc.subscribe('mesh.events.globex.>');

    const closedWith = await subscription.closed;

    expect(closedWith).toBeInstanceOf(PermissionViolationError);
    expect(closedWith).toMatchObject({ operation: 'subscription', subject: 'mesh.events.globex.>' });
  });

  it('when the tenant publishes a submission on the gateway ingress, the server refuses it', async () => {
    const tenant = await connectAs('tenant-acme');
    tenant.nc.publish('mesh.gateway.submit', '{"account_id":"acme"}');
    const violation = await refusedPublish(tenant, 'mesh.gateway.submit');
    expect(violation.operation).toBe('publish');
  });

  it('when the executor publishes a received task, the server refuses it; the gateway writes one to MESH_TASKS', async () => {
    const executor = await connectAs('executor');
    executor.nc.publish('mesh.tasks.received.acme', '{"forged":true}');
    await refusedPublish(executor, 'mesh.tasks.received.acme');

    // Only the provisioner creates streams.
    const provisioner = await connectAs('provisioner');
    await (
      await jetstreamManager(provisioner.nc)
    ).streams.add({
      name: 'MESH_TASKS',
      subjects: ['mesh.tasks.>'],
    });
    const gateway = await connectAs('gateway');
    const ack = await jetstream(gateway.nc).publish('mesh.tasks.received.acme', '{"task":1}', {
      msgID: TRACE_ID,
    });
    expect(ack).toMatchObject({ stream: 'MESH_TASKS', seq: 1, duplicate: false });
    expect(gateway.violations).toEqual([]);
  });

  it('when the assembler finds its consumer with an older ack_wait, it may bring it to its own settings', async () => {
    const provisioner = await connectAs('provisioner');
    await (
      await jetstreamManager(provisioner.nc)
    ).streams.add({ name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] });
    const assembler = await connectAs('assembler');
    const jsm = await jetstreamManager(assembler.nc);
    await jsm.consumers.add('MESH_TASKS', {
      durable_name: 'assembler',
      filter_subject: 'mesh.tasks.received.*',
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(30_000),
    });

    const updated = await jsm.consumers.update('MESH_TASKS', 'assembler', { ack_wait: nanos(5_000) });
    expect(updated.config.ack_wait).toBe(nanos(5_000));
    expect(assembler.violations).toEqual([]);
  });

  it('when the executor subscribes to the gateway ingress, it is refused, so it cannot intercept submissions', async () => {
    const executor = await connectAs('executor');
    const closedWith = await executor.nc.subscribe('mesh.gateway.submit').closed;
    expect(closedWith).toBeInstanceOf(PermissionViolationError);
  });

  it("when the executor submits a sub-task on the gateway's trusted subject and cancels one, the gateway answers and the cancel is heard; an account's own submit subject stays closed to it", async () => {
    const gateway = await connectAs('gateway');
    const assembler = await connectAs('assembler');
    const executor = await connectAs('executor');
    const ingress = gateway.nc.subscribe('mesh.gateway.submit', { queue: 'gateway', max: 1 });
    void (async () => {
      for await (const msg of ingress) msg.respond(`accepted ${msg.string()}`);
    })();
    const cancel = await subscribeForOne(assembler, `mesh.control.cancel.acme.${TRACE_ID}`);
    await gateway.nc.flush();

    const reply = await executor.nc.request('mesh.gateway.submit', 'sub-task', { timeout: 5_000 });
    executor.nc.publish(`mesh.control.cancel.acme.${TRACE_ID}`, 'cancel');
    executor.nc.publish('mesh.gateway.submit.acme', 'confined');

    expect(reply.string()).toBe('accepted sub-task');
    expect((await cancel.message).string()).toBe('cancel');
    await refusedPublish(executor, 'mesh.gateway.submit.acme');
    expect(gateway.violations).toEqual([]);
  });

  it('when an executor asks another executor instance whether it still runs a task, that instance answers; a tenant may not ask', async () => {
    const asking = await connectAs('executor');
    const owner = await connectAs('executor');
    const tenant = await connectAs('tenant-acme');
    const questions = owner.nc.subscribe('mesh.control.attempts.0a1b2c3d4e5f6a7b', { max: 1 });
    void (async () => {
      for await (const msg of questions) msg.respond(`running ${msg.string()}`);
    })();
    await owner.nc.flush();

    const reply = await asking.nc.request('mesh.control.attempts.0a1b2c3d4e5f6a7b', 'task', {
      timeout: 5_000,
    });

    expect(reply.string()).toBe('running task');
    expect(owner.violations).toEqual([]);
    tenant.nc.publish('mesh.control.attempts.0a1b2c3d4e5f6a7b', 'task');
    await refusedPublish(tenant, 'mesh.control.attempts.0a1b2c3d4e5f6a7b');
  });

  it('when the executor asks the recall service, recall answers on the reply subject it may only respond to', async () => {
    const recall = await connectAs('recall');
    const executor = await connectAs('executor');
    const endpoint = recall.nc.subscribe('mesh.recall.actions', { queue: 'recall', max: 1 });
    void (async () => {
      for await (const msg of endpoint) msg.respond(`answer to ${msg.string()}`);
    })();
    await recall.nc.flush();

    const reply = await executor.nc.request('mesh.recall.actions', 'query', { timeout: 5_000 });

    expect(reply.string()).toBe('answer to query');
    expect(recall.violations).toEqual([]);
  });

  it("when the acme upstream subscribes to _INBOX.>, where other users' JetStream answers go, it is refused", async () => {
    const upstream = await connectAs('upstream-acme');
    const closedWith = await upstream.nc.subscribe('_INBOX.>').closed;
    expect(closedWith).toMatchObject({ operation: 'subscription', subject: '_INBOX.>' });
  });

  it('when the executor writes an agent, the server refuses it; the gateway may', async () => {
    const provisioner = await connectAs('provisioner');
    await new Kvm(jetstream(provisioner.nc)).create('mesh_agents');
    const executor = await connectAs('executor');
    const forged = new Kvm(jetstream(executor.nc)).open('mesh_agents').then((kv) => kv.put('shared.x', '{}'));
    const error = await forged.then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect((error as { cause?: unknown })?.cause ?? error).toMatchObject({
      operation: 'publish',
      subject: '$KV.mesh_agents.shared.x',
    });

    const gateway = await connectAs('gateway');
    const kv = await new Kvm(jetstream(gateway.nc)).open('mesh_agents');
    expect(await kv.put('shared.x', '{}')).toBeGreaterThan(0);
  });

  it('parked tasks: the provisioner creates the bucket; the gateway reads a parked task, records a decision compare-and-set and queues the task again on its assembled subject; the tenant may not read it', async () => {
    const provisioner = await connectAs('provisioner');
    const provisioning = await jetstreamManager(provisioner.nc);
    await provisioning.streams
      .info('MESH_TASKS')
      .catch(() => provisioning.streams.add({ name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] }));
    await new Kvm(jetstream(provisioner.nc)).create('mesh_parked_tasks');
    expect(provisioner.violations).toEqual([]);

    const gateway = await connectAs('gateway');
    const kv = await new Kvm(jetstream(gateway.nc)).open('mesh_parked_tasks');
    await kv.put(`acme.${TRACE_ID}`, '{"approvals":"pending"}');
    const entry = await kv.get(`acme.${TRACE_ID}`);
    expect(entry?.string()).toBe('{"approvals":"pending"}');
    expect(await kv.update(`acme.${TRACE_ID}`, '{"approvals":"approved"}', entry!.revision)).toBeGreaterThan(
      entry!.revision,
    );
    const queued = await jetstream(gateway.nc).publish('mesh.tasks.assembled.acme', '{"task":"resumed"}');
    expect(queued.stream).toBe('MESH_TASKS');
    expect(gateway.violations).toEqual([]);

    const tenant = await connectAs('tenant-acme');
    await tenant.nc
      .request('$JS.API.STREAM.INFO.KV_mesh_parked_tasks', '', { timeout: 1_000 })
      .catch(() => undefined);
    await refusedPublish(tenant, '$JS.API.STREAM.INFO.KV_mesh_parked_tasks');
  });

  it("accounts' daily usage: the executor adds to mesh_account_usage, the gateway reads it but may not write it, the assembler may not read it", async () => {
    const provisioner = await connectAs('provisioner');
    await new Kvm(jetstream(provisioner.nc)).create('mesh_account_usage', { ttl: 2 * 86_400_000 });
    const executor = await connectAs('executor');
    const written = await new Kvm(jetstream(executor.nc)).open('mesh_account_usage');
    const revision = await written.create('acme.2026-11-24', '{"total_tokens":10}');
    expect(await written.update('acme.2026-11-24', '{"total_tokens":20}', revision)).toBeGreaterThan(
      revision,
    );

    const gateway = await connectAs('gateway');
    const read = await new Kvm(jetstream(gateway.nc)).open('mesh_account_usage');
    expect((await read.get('acme.2026-11-24'))?.string()).toBe('{"total_tokens":20}');
    const forged = await read.put('acme.2026-11-24', '{"total_tokens":0}').then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    expect((forged as { cause?: unknown })?.cause ?? forged).toMatchObject({
      operation: 'publish',
      subject: '$KV.mesh_account_usage.acme.2026-11-24',
    });

    const assembler = await connectAs('assembler');
    const peek = await new Kvm(jetstream(assembler.nc))
      .open('mesh_account_usage')
      .then((kv) => kv.get('acme.2026-11-24'))
      .then(
        () => undefined,
        (rejection: unknown) => rejection,
      );
    expect(peek).toBeInstanceOf(Error);
    expect(assembler.violations.some((error) => error.subject.includes('KV_mesh_account_usage'))).toBe(true);
  });

  it('parked tasks: the executor keeps, changes, watches and deletes them in mesh_parked_tasks and queues one again on its assembled-task subject; it may not purge the bucket, and the assembler may not read it', async () => {
    const provisioner = await connectAs('provisioner');
    const provisioning = await jetstreamManager(provisioner.nc);
    await provisioning.streams
      .info('MESH_TASKS')
      .catch(() => provisioning.streams.add({ name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] }));
    await new Kvm(jetstream(provisioner.nc)).create('mesh_parked_tasks');

    const executor = await connectAs('executor');
    const js = jetstream(executor.nc);
    const kv = await new Kvm(js).open('mesh_parked_tasks');
    // Not the gateway test's key, and a watch of this key only: the bucket outlives each test.
    const key = `acme.${TRACE_ID.replace(/.$/, 'e')}`;
    const watch = await kv.watch({ key });
    const parked = await kv.put(key, '{"approvals":["pending"]}');
    expect((await kv.get(key))?.string()).toBe('{"approvals":["pending"]}');
    const decided = await kv.update(key, '{"approvals":["approved"]}', parked);
    const seen: string[] = [];
    for await (const entry of watch) {
      seen.push(entry.string());
      if (entry.revision === decided) break;
    }
    expect(seen).toEqual(['{"approvals":["pending"]}', '{"approvals":["approved"]}']);
    const queued = await js.publish('mesh.tasks.assembled.acme', '{"task":"resumed"}', {
      msgID: `${key}.resume.1`,
    });
    expect(queued).toMatchObject({ stream: 'MESH_TASKS', duplicate: false });
    await kv.delete(key, { previousSeq: decided });
    expect(await kv.get(key)).toMatchObject({ operation: 'DEL' });
    expect(executor.violations).toEqual([]);

    await (await jetstreamManager(executor.nc)).streams.purge('KV_mesh_parked_tasks').catch(() => undefined);
    await refusedPublish(executor, '$JS.API.STREAM.PURGE.KV_mesh_parked_tasks');
    const assembler = await connectAs('assembler');
    await new Kvm(jetstream(assembler.nc))
      .open('mesh_parked_tasks')
      .then((bucket) => bucket.get(key))
      .catch(() => undefined);
    await waitFor(
      () => assembler.violations.find((error) => error.subject?.includes('KV_mesh_parked_tasks')),
      { description: 'the assembler refused the parked tasks bucket' },
    );
  });

  it('model key limits: the provisioner creates mesh_model_limits; the executor takes, renews, watches and frees slots and counts minutes in it; the tenant and the assembler may not read it', async () => {
    const provisioner = await connectAs('provisioner');
    await new Kvm(jetstream(provisioner.nc)).create('mesh_model_limits', { ttl: 5 * 60_000 });
    expect(provisioner.violations).toEqual([]);

    const executor = await connectAs('executor');
    const kv = await new Kvm(jetstream(executor.nc)).open('mesh_model_limits');
    const slot = 'a1b2c3.slot.0';
    const watch = await kv.watch({ key: 'a1b2c3.slot.*', include: KvWatchInclude.UpdatesOnly });
    const taken = await kv.create(slot, '{"holder":"executor-1","expires_at":1}');
    const renewed = await kv.update(slot, '{"holder":"executor-1","expires_at":2}', taken);
    await kv.delete(slot, { previousSeq: renewed });
    const seen: string[] = [];
    for await (const entry of watch) {
      seen.push(entry.operation);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual(['PUT', 'PUT', 'DEL']);
    const minute = await kv.create('a1b2c3.rpm.29000000', '1');
    expect(await kv.update('a1b2c3.rpm.29000000', '2', minute)).toBeGreaterThan(minute);
    expect(executor.violations).toEqual([]);

    for (const user of ['tenant-acme', 'assembler'] as const) {
      const other = await connectAs(user);
      await other.nc
        .request('$JS.API.STREAM.INFO.KV_mesh_model_limits', '', { timeout: 1_000 })
        .catch(() => undefined);
      await refusedPublish(other, '$JS.API.STREAM.INFO.KV_mesh_model_limits');
    }
  });

  it('dead letters: the executor copies a task to MESH_DEAD_LETTERS, deletes it from MESH_TASKS and reads the MAX_DELIVERIES advisories MESH_TASK_ADVISORIES stores; the gateway reads and drops letters; the assembler may not read them', async () => {
    const provisioner = await connectAs('provisioner');
    const provisioning = await jetstreamManager(provisioner.nc);
    await provisioning.streams.add({ name: 'MESH_DEAD_LETTERS', subjects: ['mesh.dead.>'] });
    await provisioning.streams.add({
      name: 'MESH_TASK_ADVISORIES',
      subjects: ['$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.MESH_TASKS.*'],
      retention: RetentionPolicy.Workqueue,
    });
    await provisioning.streams
      .info('MESH_TASKS')
      .catch(() => provisioning.streams.add({ name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] }));
    const assembler = await connectAs('assembler');
    const { seq } = await jetstream(assembler.nc).publish('mesh.tasks.assembled.acme', '{"task":"dead"}');

    // The task's one delivery dies unacknowledged; on the next pull the server gives up and its advisory
    // is stored, then read through the executors' shared durable.
    const executor = await connectAs('executor');
    const executorJsm = await jetstreamManager(executor.nc);
    const executorJs = jetstream(executor.nc);
    await executorJsm.consumers.add('MESH_TASKS', {
      durable_name: 'executor',
      filter_subject: 'mesh.tasks.assembled.*',
      ack_policy: AckPolicy.Explicit,
      max_deliver: 1,
      ack_wait: nanos(300),
    });
    const tasks = await executorJs.consumers.get('MESH_TASKS', 'executor');
    await executorJsm.consumers.add('MESH_TASK_ADVISORIES', {
      durable_name: 'dead-letters',
      ack_policy: AckPolicy.Explicit,
    });
    const advisories = await executorJs.consumers.get('MESH_TASK_ADVISORIES', 'dead-letters');
    // Tasks earlier tests left in MESH_TASKS go the same way first.
    let advised: unknown;
    await waitFor(
      async () => {
        await tasks.next({ expires: 1_000 });
        const advisory = await advisories.next({ expires: 1_000 });
        if (advisory === null) return false;
        expect(await advisory.ackAck()).toBe(true);
        const body = advisory.json<{ stream_seq: number }>();
        if (body.stream_seq === seq) advised = body;
        return advised !== undefined;
      },
      { description: "the task's MAX_DELIVERIES advisory stored and read", timeoutMs: 30_000 },
    );
    expect(advised).toMatchObject({ stream: 'MESH_TASKS', consumer: 'executor', stream_seq: seq });

    expect((await executorJsm.streams.getMessage('MESH_TASKS', { seq }))?.string()).toBe('{"task":"dead"}');
    await executorJs.publish(`mesh.dead.acme.${TRACE_ID}`, '{"letter":1}');
    expect(await executorJsm.streams.deleteMessage('MESH_TASKS', seq, false)).toBe(true);
    await executor.nc.flush();
    expect(executor.violations).toEqual([]);

    const gateway = await connectAs('gateway');
    const gatewayJsm = await jetstreamManager(gateway.nc);
    const info = await gatewayJsm.streams.info('MESH_DEAD_LETTERS', { subjects_filter: 'mesh.dead.acme.*' });
    expect(Object.keys(info.state.subjects ?? {})).toEqual([`mesh.dead.acme.${TRACE_ID}`]);
    const letter = await gatewayJsm.streams.getMessage('MESH_DEAD_LETTERS', {
      last_by_subj: `mesh.dead.acme.${TRACE_ID}`,
    });
    expect(letter?.string()).toBe('{"letter":1}');
    expect(await gatewayJsm.streams.deleteMessage('MESH_DEAD_LETTERS', letter!.seq, false)).toBe(true);
    expect(gateway.violations).toEqual([]);

    const assemblerJsm = await jetstreamManager(assembler.nc);
    await assemblerJsm.streams.getMessage('MESH_DEAD_LETTERS', { seq: 1 }).catch(() => undefined);
    await refusedPublish(assembler, '$JS.API.STREAM.MSG.GET.MESH_DEAD_LETTERS');
  });
});

describe('infra/nats/single-node.conf', () => {
  it('loads as a whole (with the pre-2.12 durability stand-in on this test server) and serves JetStream to the provisioner', async () => {
    // The production durability file needs nats-server 2.12+; the test image may be older.
    const dir = mkdtempSync(join(tmpdir(), 'infra-single-node-'));
    cpSync(INFRA_NATS_DIR, dir, { recursive: true });
    copyFileSync(join(dir, 'jetstream-durability.pre-2.12.conf'), join(dir, 'jetstream-durability.conf'));
    const passwords = generateInfraPasswords();
    const server = await startNats({
      name: 'infra-single-node',
      config: {
        dir,
        file: 'single-node.conf',
        setsStoreDir: true,
        environment: infraPasswordEnvironment(passwords),
      },
      client: { user: 'provisioner', pass: passwords.provisioner, inboxPrefix: inboxPrefix('provisioner') },
    });
    try {
      const nc = await connect({
        servers: server.url,
        user: 'provisioner',
        pass: passwords.provisioner,
        inboxPrefix: inboxPrefix('provisioner'),
      });
      const info = await (
        await jetstreamManager(nc)
      ).streams.add({
        name: Streams.EVENTS.name,
        subjects: [...Streams.EVENTS.subjects],
        republish: { ...Streams.EVENTS.republish },
      });
      expect(info.config.name).toBe('MESH_EVENTS');
      await nc.close();
    } finally {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
