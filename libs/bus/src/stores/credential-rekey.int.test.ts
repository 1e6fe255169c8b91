/**
 * Master key rotation of stored credentials on real NATS: values written under key A are re-encrypted
 * under key B by the `rekey-credentials` command (its real entry point, as a process), after which a
 * store that knows only B reads them; a record no given key opens is reported and left as it was.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Buckets } from '@agentmesh/protocol';
import { startNats, startServiceProcess, type NatsServer } from '@agentmesh/testkit';
import type { MasterKey } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeJson } from '../json.js';
import { openMeshBuckets } from '../resources.js';
import { credentialKey } from './credential-record.js';
import { CredentialRekeyProblem, rekeyCredentials } from './credential-rekey.js';
import { CredentialStore } from './credential-store.js';

const entry = fileURLToPath(new URL('../bin/rekey-credentials.ts', import.meta.url));
const masterKey = (kid: string): MasterKey => ({ kid, key: randomBytes(32).toString('base64') });

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  kv = (await openMeshBuckets(jetstream(nc), { only: ['credentials'] })).credentials;
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

async function runCommand(env: Record<string, string>) {
  const run = await startServiceProcess({ entry, env: { NATS_URL: nats.url, ...env } });
  const code = await run.exited;
  return { code, logs: run.logs, output: `${JSON.stringify(run.logs)}\n${run.stderr()}` };
}

describe('rekey-credentials', () => {
  it("credentials under key A (users' and account-wide), the command run with B as the key, are read by a store that knows only B; a record under an unknown key is reported and kept; a second run changes nothing", async () => {
    const keyA = masterKey('master-a');
    const keyB = masterKey('master-b');
    const keyC = masterKey('master-c-lost');
    const underA = new CredentialStore(kv, { current: keyA });
    await underA.put('acme', 'user-1', 'QCC_KEY', 'value-one');
    await underA.put('acme', 'user-2', 'MODEL_KEY', 'value-two');
    await underA.putAccountCredential('acme', 'SHARED_KEY', 'value-shared');
    await new CredentialStore(kv, { current: keyC }).put('acme', 'user-3', 'LOST', 'value-three');
    const lostKey = credentialKey('acme', 'user-3', 'LOST');
    const lostBefore = (await kv.get(lostKey))!.value;
    const env = {
      CREDENTIALS_MASTER_KEY_ID: keyB.kid,
      CREDENTIALS_MASTER_KEY: keyB.key,
      CREDENTIALS_PREVIOUS_KEYS: `${keyA.kid}:${keyA.key}`,
    };

    const first = await runCommand(env);
    expect(first.code).toBe(2);
    const report = first.logs.find((line) => 'rekeyed' in line);
    expect(report).toMatchObject({
      rekeyed: 3,
      already_current: 0,
      left_as_they_were: [{ key: lostKey, problem: CredentialRekeyProblem.UNKNOWN_KEY, kid: keyC.kid }],
    });
    // No key material and no value in anything it wrote.
    for (const secret of [keyA.key, keyB.key, 'value-one', 'value-two', 'value-three', 'value-shared']) {
      expect(first.output).not.toContain(secret);
    }

    const underBOnly = new CredentialStore(kv, { current: keyB });
    expect(await underBOnly.resolve('acme', 'user-1', ['QCC_KEY'])).toEqual({
      values: { QCC_KEY: 'value-one' },
      missing: [],
    });
    expect((await underBOnly.resolve('acme', 'user-2', ['MODEL_KEY'])).values).toEqual({
      MODEL_KEY: 'value-two',
    });
    // The account-wide record was re-encrypted under its own key (its additional data) and still serves any user.
    expect((await underBOnly.resolve('acme', 'anyone', ['SHARED_KEY'])).values).toEqual({
      SHARED_KEY: 'value-shared',
    });
    expect((await kv.get(lostKey))!.value).toEqual(lostBefore);

    const second = await runCommand(env);
    expect(second.code).toBe(2);
    expect(second.logs.find((line) => 'rekeyed' in line)).toMatchObject({ rekeyed: 0, already_current: 3 });
  });

  it('without the old key in its environment, the command refuses to start and says which variable is missing, without echoing any key', async () => {
    const keyB = masterKey('master-b');
    const run = await runCommand({ CREDENTIALS_MASTER_KEY_ID: keyB.kid, CREDENTIALS_MASTER_KEY: keyB.key });
    expect(run.code).toBe(1);
    expect(run.output).toContain('CREDENTIALS_PREVIOUS_KEYS');
    expect(run.output).not.toContain(keyB.key);
  });
});

describe('rekeyCredentials', () => {
  it('a record that is not an envelope, and one whose ciphertext does not open under its key id, are reported and left as they were', async () => {
    const bucket = await new Kvm(jetstream(nc)).create(`${Buckets.CREDENTIALS}_rekey_${Date.now()}`);
    const keyA = masterKey('a');
    const keyB = masterKey('b');
    await new CredentialStore(bucket, { current: keyA }).put('acme', 'u', 'GOOD', 'good-value');
    await bucket.put('acme.dQ.Q09SUlVQVA', encodeJson({ not: 'an envelope' }));
    // Encrypted under another key that carries A's id: the id is known, the ciphertext does not open.
    await new CredentialStore(bucket, { current: { kid: keyA.kid, key: masterKey('x').key } }).put(
      'acme',
      'u',
      'FORGED',
      'forged-value',
    );

    const report = await rekeyCredentials(bucket, { current: keyB, previous: [keyA] });

    expect(report.rekeyed).toBe(1);
    expect(report.leftAsTheyWere).toEqual(
      expect.arrayContaining([
        { key: 'acme.dQ.Q09SUlVQVA', problem: CredentialRekeyProblem.CORRUPT },
        {
          key: credentialKey('acme', 'u', 'FORGED'),
          problem: CredentialRekeyProblem.DOES_NOT_DECRYPT,
          kid: 'a',
        },
      ]),
    );
    expect(
      (await new CredentialStore(bucket, { current: keyB }).resolve('acme', 'u', ['GOOD'])).values,
    ).toEqual({
      GOOD: 'good-value',
    });
  });
});
