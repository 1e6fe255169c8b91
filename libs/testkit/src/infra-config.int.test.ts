/**
 * Checks infra/nats/accounts.conf on a real nats-server: the file is copied into a container started
 * from $AGENTMESH_NATS_IMAGE with the users' passwords in the container's environment, and each user
 * connects for real. A start that loses its port to another test is retried on fresh ports.
 * Permission refusals are asserted as the PermissionViolationErrors nats.js reports.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import {
  AuthorizationError,
  connect,
  PermissionViolationError,
  type Msg,
  type NatsConnection,
} from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findFreePorts } from './free-ports.js';
import { startNatsContainer } from './nats/nats-container.js';
import { withFreshPortsOnConflict } from './nats/nats-launch.js';
import type { NatsRuntime } from './nats/nats-runtime.js';
import { LOOPBACK, natsUrl } from './nats/nats-server-args.js';
import { resolveNatsSettings } from './nats/nats-settings.js';
import { waitFor } from './wait-for.js';

const ACCOUNTS_CONF = fileURLToPath(new URL('../../../infra/nats/accounts.conf', import.meta.url));
const CONF_IN_CONTAINER = '/etc/agentmesh/accounts.conf';
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

const USERS = ['gateway', 'assembler', 'executor', 'recall', 'upstream', 'tenant-acme'] as const;
type User = (typeof USERS)[number];

/** `tenant-acme` → `TENANT_ACME_PASSWORD`, as accounts.conf names them. */
function passwordVariable(user: User): string {
  return `${user.replace('-', '_').toUpperCase()}_PASSWORD`;
}

/**
 * nats-server parses a variable's value as a config value, so `12345` would be a number and `-x` a
 * syntax error; quoted, every password is read as the string it is.
 */
function asConfigString(password: string): string {
  return JSON.stringify(password);
}

interface Client {
  nc: NatsConnection;
  /** Every permission violation the server reported on this connection, in order. */
  violations: PermissionViolationError[];
}

describe('infra/nats/accounts.conf', () => {
  // Two passwords nats-server would misread if its variables were not quoted: a leading '-' and all digits.
  const passwords: Record<User, string> = {
    ...Object.fromEntries(USERS.map((user) => [user, randomBytes(18).toString('base64url')])),
    gateway: `-${randomBytes(18).toString('base64url')}`,
    recall: String(randomBytes(6).readUIntBE(0, 6)),
  } as Record<User, string>;
  const clients: Client[] = [];
  let server: NatsRuntime | undefined;
  let url: string;

  beforeAll(async () => {
    // Another test file may take a port between our choosing it and the server binding it.
    server = await withFreshPortsOnConflict(async () => {
      const [port] = (await findFreePorts(1)) as [number];
      url = natsUrl(port);
      return startNatsContainer(
        resolveNatsSettings().image,
        {
          name: 'infra-accounts',
          args: ['-c', CONF_IN_CONTAINER, '-a', LOOPBACK, '-p', String(port), '-n', 'infra-accounts', '-js'],
          jetstream: true,
          startupTimeoutMs: 60_000,
        },
        {
          files: [{ source: ACCOUNTS_CONF, target: CONF_IN_CONTAINER }],
          environment: Object.fromEntries(
            USERS.map((user) => [passwordVariable(user), asConfigString(passwords[user])]),
          ),
        },
      );
    });
  });

  afterAll(async () => {
    await Promise.allSettled(clients.map(({ nc }) => nc.close()));
    await server?.remove();
  });

  async function connectAs(user: User): Promise<Client> {
    const nc = await connect({ servers: url, user, pass: passwords[user], maxReconnectAttempts: 0 });
    const client: Client = { nc, violations: [] };
    clients.push(client);
    void (async () => {
      for await (const status of nc.status()) {
        if (status.type === 'error' && status.error instanceof PermissionViolationError) {
          client.violations.push(status.error);
        }
      }
    })();
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

  it('when every service, the upstream and the tenant log in with their passwords, all are admitted', async () => {
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

  it('when the tenant subscribes to its own events, it receives the events the executor publishes', async () => {
    const tenant = await connectAs('tenant-acme');
    const executor = await connectAs('executor');
    const received = await subscribeForOne(tenant, 'mesh.events.acme.>');

    executor.nc.publish(`mesh.events.acme.${TRACE_ID}`, '{"type":"done"}');

    const msg = await received.message;
    expect(msg.subject).toBe(`mesh.events.acme.${TRACE_ID}`);
    expect(msg.string()).toBe('{"type":"done"}');
    expect(executor.violations).toEqual([]);
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

    const gateway = await connectAs('gateway');
    await (
      await jetstreamManager(gateway.nc)
    ).streams.add({
      name: 'MESH_TASKS',
      subjects: ['mesh.tasks.>'],
    });
    const ack = await jetstream(gateway.nc).publish('mesh.tasks.received.acme', '{"task":1}', {
      msgID: TRACE_ID,
    });
    expect(ack).toMatchObject({ stream: 'MESH_TASKS', seq: 1, duplicate: false });
    expect(gateway.violations).toEqual([]);
  });

  it('when the executor subscribes to the gateway ingress, it is refused, so it cannot intercept submissions', async () => {
    const executor = await connectAs('executor');
    const closedWith = await executor.nc.subscribe('mesh.gateway.submit').closed;
    expect(closedWith).toBeInstanceOf(PermissionViolationError);
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
});
