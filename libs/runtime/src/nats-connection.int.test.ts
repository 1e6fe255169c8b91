/**
 * connectNats against real servers that demand a login: user/password (in NATS_URL, where nats.js
 * itself ignores it, or in NATS_USER/NATS_PASSWORD), an NKEY, a token, a credentials file (operator
 * mode) and mutual TLS. The user/password server also denies `_INBOX.>`, which shows that every
 * JetStream, KV and consumer reply nats.js asks for goes to the connection's own inbox prefix.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import {
  AuthorizationError,
  connect,
  credsAuthenticator,
  nkeys,
  PermissionViolationError,
  type NatsConnection,
} from '@nats-io/transport-node';
import { startNats, startServiceProcess, type NatsServer } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeOperatorSetup, makeTlsFiles } from './__fixtures__/nats-credentials.js';
import { baseConfigSchema, loadConfig } from './config.js';
import { connectNats } from './nats-connection.js';

const echoEntry = fileURLToPath(new URL('./__fixtures__/echo-service.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'runtime-nats-auth-'));
// A leading '-' and a ':' / '@' that must be percent-encoded in a URL.
const SVC_PASSWORD = '-pw:with@chars';
const PEER_PASSWORD = 'peer-password-1';
const TOKEN = 'token-0123456789';
const nkeyUser = nkeys.createUser();
const nkeySeed = new TextDecoder().decode(nkeyUser.getSeed());

const servers: NatsServer[] = [];
const connections: NatsConnection[] = [];
let users: NatsServer;
let tokenServer: NatsServer;
let operatorServer: NatsServer;
let tlsServer: NatsServer;
let credsFile: string;
let tls: ReturnType<typeof makeTlsFiles>;

/** A config directory of its own holding `server.conf` with `text`. */
function writeConfig(name: string, text: string): string {
  const path = mkdtempSync(join(dir, `${name}-`));
  writeFileSync(join(path, 'server.conf'), text);
  return path;
}

async function track(server: Promise<NatsServer>): Promise<NatsServer> {
  const started = await server;
  servers.push(started);
  return started;
}

async function connectWith(env: Record<string, string | undefined>, name = 'svc'): Promise<NatsConnection> {
  const nc = await connectNats({ settings: loadConfig(baseConfigSchema, env), name });
  connections.push(nc);
  return nc;
}

beforeAll(async () => {
  // Services get JetStream, KV, ack and flow-control subjects, and replies only under their own prefix.
  const usersConfig = writeConfig(
    'users',
    `SVC = {
  publish: { allow: ["$JS.API.>", "$KV.>", "$JS.ACK.>", "$JS.FC.>", "prefix.>"] }
  subscribe: { allow: ["_INBOX_svc.>", "test.echo"] }
  allow_responses: true
}
authorization {
  users: [
    { user: svc, password: $SVC_PASSWORD, permissions: $SVC }
    { nkey: ${nkeyUser.getPublicKey()}, permissions: $SVC }
    { user: peer, password: $PEER_PASSWORD, permissions: {
        publish: { allow: ["test.echo"] }, subscribe: { allow: ["_INBOX_peer.>"] } } }
  ]
}
`,
  );
  const operator = makeOperatorSetup(dir);
  credsFile = operator.credsFile;
  tls = makeTlsFiles(dir);
  const tlsDir = writeConfig(
    'tls',
    'tls {\n  cert_file: "server.pem"\n  key_file: "server-key.pem"\n  ca_file: "ca.pem"\n  verify: true\n}\n',
  );
  copyFileSync(tls.serverCert, join(tlsDir, 'server.pem'));
  copyFileSync(tls.serverKey, join(tlsDir, 'server-key.pem'));
  copyFileSync(tls.ca, join(tlsDir, 'ca.pem'));
  [users, tokenServer, operatorServer, tlsServer] = await Promise.all([
    track(
      startNats({
        name: 'auth-users',
        config: {
          dir: usersConfig,
          file: 'server.conf',
          environment: {
            SVC_PASSWORD: JSON.stringify(SVC_PASSWORD),
            PEER_PASSWORD: JSON.stringify(PEER_PASSWORD),
          },
        },
        client: { user: 'svc', pass: SVC_PASSWORD, inboxPrefix: '_INBOX_svc' },
      }),
    ),
    track(
      startNats({
        name: 'auth-token',
        jetstream: false,
        config: {
          dir: writeConfig('token', 'authorization { token: $NATS_TOKEN }\n'),
          file: 'server.conf',
          environment: { NATS_TOKEN: JSON.stringify(TOKEN) },
        },
        client: { token: TOKEN },
      }),
    ),
    track(
      startNats({
        name: 'auth-operator',
        jetstream: false,
        config: { dir: writeConfig('operator', operator.serverConfig), file: 'server.conf' },
        client: { authenticator: credsAuthenticator(readFileSync(credsFile)) },
      }),
    ),
    track(
      startNats({
        name: 'auth-tls',
        jetstream: false,
        config: { dir: tlsDir, file: 'server.conf' },
        client: { tls: { caFile: tls.ca, certFile: tls.clientCert, keyFile: tls.clientKey } },
      }),
    ),
  ]);
}, 180_000);

afterAll(async () => {
  await Promise.allSettled(connections.map((nc) => nc.close()));
  await Promise.allSettled(servers.map((server) => server.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const withUserinfo = (url: string, user: string, password: string): string =>
  url.replace('nats://', `nats://${encodeURIComponent(user)}:${encodeURIComponent(password)}@`);

/** The server's permission violation behind a failed request (nats.js wraps it as the cause). */
function permissionViolation(error: unknown): PermissionViolationError | undefined {
  if (error instanceof PermissionViolationError) return error;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause instanceof PermissionViolationError ? cause : undefined;
}

/** Every permission violation the server reports on `nc` from now on. */
function violationsOf(nc: NatsConnection): PermissionViolationError[] {
  const seen: PermissionViolationError[] = [];
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'error' && status.error instanceof PermissionViolationError)
        seen.push(status.error);
    }
  })();
  return seen;
}

describe('connectNats logs in', () => {
  it('when NATS_URL carries user:password@, the server admits the service (nats.js alone ignores it)', async () => {
    const plain = connect({ servers: withUserinfo(users.url, 'svc', SVC_PASSWORD), maxReconnectAttempts: 0 });
    await expect(plain).rejects.toBeInstanceOf(AuthorizationError);

    const nc = await connectWith({ NATS_URL: withUserinfo(users.url, 'svc', SVC_PASSWORD) });
    await nc.flush();
    expect(nc.info?.server_name).toBe('auth-users');
  });

  it('when NATS_USER/NATS_PASSWORD or an NKEY seed (inline or file) are set, the server admits the service', async () => {
    const seedFile = join(dir, 'svc.nk');
    writeFileSync(seedFile, `${nkeySeed}\n`, { mode: 0o600 });
    for (const env of [
      { NATS_USER: 'svc', NATS_PASSWORD: SVC_PASSWORD },
      { NATS_NKEY_SEED: nkeySeed },
      { NATS_NKEY_SEED_FILE: seedFile },
    ]) {
      const nc = await connectWith({ NATS_URL: users.url, ...env });
      await nc.flush();
      expect(nc.isClosed()).toBe(false);
    }
  });

  it('when NATS_TOKEN (or token@ in the URL) is set, the token server admits the service', async () => {
    for (const env of [
      { NATS_URL: tokenServer.url, NATS_TOKEN: TOKEN },
      { NATS_URL: tokenServer.url.replace('nats://', `nats://${TOKEN}@`) },
    ]) {
      const nc = await connectWith(env);
      await nc.flush();
      expect(nc.info?.server_name).toBe('auth-token');
    }
  });

  it('when NATS_CREDS_FILE names a user credentials file, the operator-mode server admits the service', async () => {
    const nc = await connectWith({ NATS_URL: operatorServer.url, NATS_CREDS_FILE: credsFile });
    await nc.flush();
    expect(nc.info?.server_name).toBe('auth-operator');
  });

  it('when NATS_TLS_* give the CA and a client certificate, the mutual-TLS server admits the service; without the certificate it refuses', async () => {
    const nc = await connectWith({
      NATS_URL: tlsServer.url,
      NATS_TLS_CA: tls.ca,
      NATS_TLS_CERT: tls.clientCert,
      NATS_TLS_KEY: tls.clientKey,
    });
    await nc.flush();
    expect(nc.info?.tls_required).toBe(true);

    const withoutCert = connect({
      servers: tlsServer.url,
      tls: { caFile: tls.ca },
      maxReconnectAttempts: 0,
      timeout: 3_000,
    });
    await expect(withoutCert).rejects.toThrow();
  });

  it('when the password is wrong, a service process stops with exit code 1 instead of waiting forever', async () => {
    const service = await startServiceProcess({
      entry: echoEntry,
      env: { NATS_URL: withUserinfo(users.url, 'svc', 'wrong-password') },
    });
    expect(await service.exited).toBe(1);
    const failure = service.logs.find((line) => line.msg === 'start-up failed');
    expect(JSON.stringify(failure)).toMatch(/Authorization Violation/i);
    expect(JSON.stringify(service.logs)).not.toContain('wrong-password');
  });

  it('when a service process has user:password@ in NATS_URL, it starts and answers another user', async () => {
    const service = await startServiceProcess({
      entry: echoEntry,
      env: { NATS_URL: withUserinfo(users.url, 'svc', SVC_PASSWORD), NATS_INBOX_PREFIX: '_INBOX_svc' },
    });
    try {
      await service.waitForLog((line) => line.msg === 'service ready');
      const peer = await connectWith(
        { NATS_URL: users.url, NATS_USER: 'peer', NATS_PASSWORD: PEER_PASSWORD },
        'peer',
      );
      expect((await peer.request('test.echo', 'ping', { timeout: 5_000 })).string()).toBe('ping');
      expect(JSON.stringify(service.logs)).not.toContain(SVC_PASSWORD);
    } finally {
      await service.stop('SIGTERM');
    }
  });
});

describe('the inbox prefix', () => {
  it('when a user may only subscribe to _INBOX_svc.>, a client with the default _INBOX prefix is refused', async () => {
    const nc = await connect({ servers: users.url, user: 'svc', pass: SVC_PASSWORD });
    connections.push(nc);
    const refused = await jetstreamManager(nc, { timeout: 3_000 }).catch((error: unknown) => error);
    expect(permissionViolation(refused)).toMatchObject({
      operation: 'subscription',
      subject: expect.stringMatching(/^_INBOX\./),
    });
  });

  it('JetStream publishes, KV gets/watches/keys, durable and ordered consumers all reply to the service prefix', async () => {
    const nc = await connectWith({ NATS_URL: users.url, NATS_USER: 'svc', NATS_PASSWORD: SVC_PASSWORD });
    const violations = violationsOf(nc);
    const jsm = await jetstreamManager(nc);
    const js = jetstream(nc);

    await jsm.streams.add({ name: 'PREFIX_TEST', subjects: ['prefix.>'], allow_direct: true });
    const ack = await js.publish('prefix.a', 'one');
    expect(ack.seq).toBe(1);
    await js.publish('prefix.b', 'two');
    expect((await jsm.direct.getMessage('PREFIX_TEST', { last_by_subj: 'prefix.b' }))?.string()).toBe('two');

    const kv = await new Kvm(js).create('prefix_bucket');
    const watch = await kv.watch();
    await kv.put('k1', 'v1');
    expect((await kv.get('k1'))?.string()).toBe('v1');
    for await (const entry of watch) {
      if (entry.key === 'k1') break;
    }
    watch.stop();
    const keys: string[] = [];
    for await (const key of await kv.keys()) keys.push(key);
    expect(keys).toEqual(['k1']);

    await jsm.consumers.add('PREFIX_TEST', {
      durable_name: 'worker',
      filter_subject: 'prefix.>',
      ack_policy: AckPolicy.Explicit,
    });
    const durable = await js.consumers.get('PREFIX_TEST', 'worker');
    const batch = await durable.fetch({ max_messages: 2, expires: 2_000 });
    const pulled: string[] = [];
    for await (const msg of batch) {
      pulled.push(msg.string());
      await msg.ackAck();
    }
    expect(pulled).toEqual(['one', 'two']);

    const ordered = await js.consumers.get('PREFIX_TEST', {
      filter_subjects: 'prefix.b',
      deliver_policy: DeliverPolicy.All,
    });
    const first = await ordered.next({ expires: 2_000 });
    expect(first?.string()).toBe('two');
    await ordered.delete();

    expect(violations).toEqual([]);
  });
});
