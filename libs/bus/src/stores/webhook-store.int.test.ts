/**
 * Webhook endpoints on real NATS: the signing secret is stored encrypted (never in clear in the bucket),
 * shown by create and rotate only, and survives a master key rotation through `rekey`.
 */
import { randomBytes } from 'node:crypto';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import type { MasterKey } from '@agentmesh/vault';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openMeshBuckets } from '../resources.js';
import { WebhookStore } from './webhook-store.js';

const masterKey = (kid: string): MasterKey => ({ kid, key: randomBytes(32).toString('base64') });

let nats: NatsServer;
let nc: NatsConnection;
let kv: KV;
beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  kv = (await openMeshBuckets(jetstream(nc), { only: ['webhooks'] })).webhooks;
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

it('a secret is stored encrypted, shown only by create and rotate; after rekey to key B a store knowing only B signs with the same secrets, and a second rekey changes nothing', async () => {
  const keyA = masterKey('master-a');
  const keyB = masterKey('master-b');
  const underA = new WebhookStore(kv, { current: keyA });
  const created = await underA.create('acme', { url: 'https://hooks.example.com/a' });
  const rotated = (await underA.rotateSecret('acme', created.id, 3_600_000))!;
  const raw = (await kv.get(`acme.${created.id}`))!.string();
  for (const secret of [created.secret, rotated.secret]) expect(raw).not.toContain(secret.slice(6));
  expect(JSON.stringify(await underA.list('acme'))).not.toContain(rotated.secret.slice(6));
  expect(await underA.get('acme', created.id)).not.toHaveProperty('secret');

  const report = await new WebhookStore(kv, { current: keyB, previous: [keyA] }).rekey();
  expect(report).toEqual({ rekeyed: 1, alreadyCurrent: 0, leftAsTheyWere: [] });
  const onlyB = new WebhookStore(kv, { current: keyB });
  expect((await onlyB.target('acme', created.id))?.secrets).toEqual([rotated.secret, created.secret]);
  await expect(underA.target('acme', created.id)).rejects.toThrow();
  expect(await onlyB.rekey()).toEqual({ rekeyed: 0, alreadyCurrent: 1, leftAsTheyWere: [] });
});
