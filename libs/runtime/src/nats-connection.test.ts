import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { afterAll, describe, expect, it } from 'vitest';
import { baseConfigSchema, ConfigError, loadConfig } from './config.js';
import { defaultInboxPrefix, natsConnectionOptions } from './nats-connection.js';

const dir = mkdtempSync(join(tmpdir(), 'runtime-nats-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function optionsFor(env: Record<string, string | undefined>, name = 'gateway') {
  return natsConnectionOptions({ settings: loadConfig(baseConfigSchema, env), name });
}

function problemsFor(env: Record<string, string | undefined>): ConfigError {
  try {
    optionsFor(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

/** What the connection's authenticator sends the server in CONNECT. */
function login(env: Record<string, string | undefined>): unknown {
  const { authenticator } = optionsFor(env);
  if (typeof authenticator !== 'function') return undefined;
  return authenticator('nonce');
}

describe('natsConnectionOptions', () => {
  it('when NATS_URL carries user:password@, the servers lose it and the login sends it (decoded)', () => {
    const env = {
      NATS_URL: 'nats://gate%40way:p%3Ass@127.0.0.1:4222, nats://gate%40way:p%3Ass@127.0.0.1:4223',
    };
    const options = optionsFor(env);
    expect(options.servers).toEqual(['nats://127.0.0.1:4222', 'nats://127.0.0.1:4223']);
    expect(login(env)).toEqual({ user: 'gate@way', pass: 'p:ss' });
  });

  it('when NATS_URL carries a bare token@, the login sends it as a token', () => {
    expect(login({ NATS_URL: 'nats://s3cret@127.0.0.1:4222' })).toEqual({ auth_token: 's3cret' });
  });

  it('when NATS_USER and NATS_PASSWORD are set, the login sends them; with NATS_TOKEN, the token', () => {
    expect(login({ NATS_USER: 'executor', NATS_PASSWORD: '-123' })).toEqual({
      user: 'executor',
      pass: '-123',
    });
    expect(login({ NATS_TOKEN: 'tok' })).toEqual({ auth_token: 'tok' });
  });

  it('when an NKEY seed is given (inline or in a file), the login signs the nonce with it', () => {
    const user = nkeys.createUser();
    const seed = new TextDecoder().decode(user.getSeed());
    const seedFile = join(dir, 'user.nk');
    writeFileSync(seedFile, `${seed}\n`);
    for (const env of [{ NATS_NKEY_SEED: seed }, { NATS_NKEY_SEED_FILE: seedFile }]) {
      const sent = login(env) as { nkey: string; sig: string };
      expect(sent.nkey).toBe(user.getPublicKey());
      const signature = Buffer.from(sent.sig, 'base64url');
      expect(user.verify(new TextEncoder().encode('nonce'), signature)).toBe(true);
    }
  });

  it('when nothing says how to log in, no authenticator is set and the inbox prefix is the service name', () => {
    const options = optionsFor({}, 'executor');
    expect(options.servers).toEqual(['nats://127.0.0.1:4222']);
    expect(options.authenticator).toBeUndefined();
    expect(options.tls).toBeUndefined();
    expect(options.inboxPrefix).toBe('_INBOX_executor');
    expect(optionsFor({ NATS_INBOX_PREFIX: '_INBOX_upstream_acme' }).inboxPrefix).toBe(
      '_INBOX_upstream_acme',
    );
    expect(defaultInboxPrefix('my service.1')).toBe('_INBOX_my_service_1');
  });

  it('when a TLS variable is set, TLS is on with the given files', () => {
    const ca = join(dir, 'ca.pem');
    writeFileSync(ca, 'not checked here');
    expect(optionsFor({ NATS_TLS_CA: ca }).tls).toEqual({ caFile: ca });
    expect(optionsFor({ NATS_TLS_CA: ca, NATS_TLS_CERT: ca, NATS_TLS_KEY: ca }).tls).toEqual({
      caFile: ca,
      certFile: ca,
      keyFile: ca,
    });
  });

  it.each([
    ['two login methods', { NATS_USER: 'a', NATS_PASSWORD: 'b', NATS_TOKEN: 'c' }, 'NATS_USER, NATS_TOKEN'],
    [
      'credentials in the URL and NATS_USER',
      { NATS_URL: 'nats://a:b@h:1', NATS_USER: 'a', NATS_PASSWORD: 'b' },
      'NATS_USER',
    ],
    ['URLs with different credentials', { NATS_URL: 'nats://a:b@h:1,nats://a:c@h:2' }, 'NATS_URL'],
    ['a user without a password', { NATS_USER: 'a' }, 'NATS_PASSWORD'],
    ['a password without a user', { NATS_PASSWORD: 'pw-secret-1' }, 'NATS_USER'],
    ['a certificate without its key', { NATS_TLS_CERT: '/etc/hostname' }, 'NATS_TLS_KEY'],
    ['a creds file that does not exist', { NATS_CREDS_FILE: '/nonexistent/user.creds' }, 'NATS_CREDS_FILE'],
    ['a seed file that holds no seed', { NATS_NKEY_SEED_FILE: '/etc/hostname' }, 'NATS_NKEY_SEED_FILE'],
  ])('when the settings give %s, a ConfigError names the variable and no secret', (_case, env, variable) => {
    const error = problemsFor(env);
    expect(error.problems.map((p) => p.variable).join(' ')).toContain(variable);
    expect(error.message).not.toContain('pw-secret-1');
    expect(error.message).not.toMatch(/:b@|:c@/);
  });

  it('when NATS_NKEY_SEED is not a user seed, the config refuses it without echoing it', () => {
    const accountSeed = new TextDecoder().decode(nkeys.createAccount().getSeed());
    const parsed = baseConfigSchema.safeParse({ NATS_NKEY_SEED: accountSeed });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).not.toContain(accountSeed);
  });
});
