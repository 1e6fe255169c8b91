#!/usr/bin/env node
/**
 * Re-encrypts every credential stored in KV `mesh_credentials`, and every webhook endpoint's signing secret
 * in KV `mesh_webhooks` (when that bucket exists), under the new master key, then exits:
 * 0 all records are under the new key, 2 some records were left as they were (listed in the report, by
 * KV key and reason), 1 the run failed. Idempotent: records under the new key already are skipped, so it
 * can be run again after a failure or after fixing a key. The keys come from the environment only:
 *   CREDENTIALS_MASTER_KEY_ID=new CREDENTIALS_MASTER_KEY=… CREDENTIALS_PREVIOUS_KEYS=old:… \
 *     NATS_URL=nats://127.0.0.1:4222 npm run rekey-credentials -w @agentmesh/bus
 */
import { Buckets } from '@agentmesh/protocol';
import { runCommand } from '@agentmesh/runtime';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { rekeyCredentials } from '../stores/credential-rekey.js';
import { WebhookStore, type WebhookRekeyReport } from '../stores/webhook-store.js';
import { rekeyCredentialsConfigSchema } from './rekey-credentials-config.js';

await runCommand({
  name: 'rekey-credentials',
  configSchema: rekeyCredentialsConfigSchema,
  failure: 're-encrypting the stored credentials failed',
  async run({ config, log, nc }) {
    // Bound, never created: a missing bucket is a wrong NATS_URL or account, not an empty store.
    const kvm = new Kvm(jetstream(nc));
    const credentials = await kvm.open(Buckets.CREDENTIALS);
    const keys = {
      current: { kid: config.CREDENTIALS_MASTER_KEY_ID, key: config.CREDENTIALS_MASTER_KEY },
      previous: config.CREDENTIALS_PREVIOUS_KEYS,
    };
    const report = await rekeyCredentials(credentials, keys);
    // A deployment of before webhooks has no such bucket: nothing to re-encrypt there.
    const webhooks: WebhookRekeyReport = await kvm
      .open(Buckets.WEBHOOKS)
      .then((kv) => new WebhookStore(kv, keys).rekey())
      .catch(() => ({ rekeyed: 0, alreadyCurrent: 0, leftAsTheyWere: [] }));
    log.info(
      {
        webhooks_rekeyed: webhooks.rekeyed,
        webhooks_already_current: webhooks.alreadyCurrent,
        webhooks_left_as_they_were: webhooks.leftAsTheyWere,
      },
      'webhook signing secrets re-encrypted',
    );
    const clean = report.leftAsTheyWere.length === 0 && webhooks.leftAsTheyWere.length === 0;
    (clean ? log.info.bind(log) : log.warn.bind(log))(
      {
        rekeyed: report.rekeyed,
        already_current: report.alreadyCurrent,
        left_as_they_were: report.leftAsTheyWere,
      },
      clean
        ? 'every stored credential is under the new master key'
        : 'some stored credentials were left as they were; the services cannot decrypt them with the new key alone',
    );
    return clean ? 0 : 2;
  },
});
