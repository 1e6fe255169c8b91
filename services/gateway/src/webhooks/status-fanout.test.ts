import { WebhookConsumers } from '@agentmesh/protocol';
import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it, vi } from 'vitest';
import {
  startStatusFanout,
  webhookKeyGroup,
  webhookKeysOf,
  type StatusFanoutOptions,
  type WebhookKeys,
} from './status-fanout.js';

/** The mirror's answers over these keys, its groups counted as the gateway's mirror counts them. */
function mirroredKeys(keys: readonly string[]): WebhookKeys {
  const groups = new Set(keys.map(webhookKeyGroup).filter((group) => group !== undefined));
  return {
    keys: () => [...keys],
    anyInGroup: (group) => groups.has(group),
    lookup: (key) => (keys.includes(key) ? { state: 'present', value: true } : { state: 'absent' }),
  };
}

describe("what the webhook keys say of a finished task's deliveries", () => {
  const trace = 'ab'.repeat(16);

  it('an account without endpoints or a webhook of the task needs no read; another account’s keys do not count', () => {
    const keys = mirroredKeys(['beta.e1', `beta.task.${trace}`, 'acme2.e1']);
    expect(webhookKeysOf(keys, 'acme', trace)).toEqual({ endpoints: false, own: false });
  });

  it("an endpoint of the account, or the task's own webhook, is found; another task's webhook is not an endpoint", () => {
    expect(webhookKeysOf(mirroredKeys(['acme.e1']), 'acme', trace)).toEqual({ endpoints: true, own: false });
    const taskKeys = mirroredKeys([`acme.task.${trace}`, `acme.task.${'cd'.repeat(16)}`]);
    expect(webhookKeysOf(taskKeys, 'acme', trace)).toEqual({ endpoints: false, own: true });
  });

  it("an endpoint's key counts in its account's group; a task's own webhook in none", () => {
    expect(webhookKeyGroup('acme.e1')).toBe('acme');
    expect(webhookKeyGroup(`acme.task.${trace}`)).toBeUndefined();
    expect(webhookKeyGroup('no-dot')).toBeUndefined();
  });

  it('without the keys, or while the mirror cannot say, nothing is known and the bucket is read', () => {
    expect(webhookKeysOf(undefined, 'acme', trace)).toBeUndefined();
    const unsure: WebhookKeys = {
      keys: () => undefined,
      anyInGroup: () => undefined,
      lookup: () => ({ state: 'unknown' }),
    };
    expect(webhookKeysOf(unsure, 'acme', trace)).toBeUndefined();
  });
});

describe('when a gateway starts reading the status consumer', () => {
  /** A JetStream manager where the status consumer does not exist; what is asked of it is recorded. */
  const withoutConsumer = () => {
    const added: string[] = [];
    const jsm = {
      consumers: {
        info: async () => {
          throw new JetStreamApiError({ code: 404, err_code: 10014, description: 'consumer not found' });
        },
        add: async (_stream: string, config: { durable_name?: string }) => {
          added.push(config.durable_name ?? '');
          return {};
        },
      },
    };
    // Reading fails at once (no server here); the loop waits to try again until stopped.
    const js = { consumers: { get: async () => Promise.reject(new Error('no server in this test')) } };
    return { jsm, js, added };
  };
  const options = (fake: ReturnType<typeof withoutConsumer>, keys: () => string[] | undefined) =>
    ({
      js: fake.js,
      jsm: fake.jsm,
      endpoints: {},
      taskWebhooks: {},
      publicBaseUrl: undefined,
      log: { warn: () => undefined, debug: () => undefined },
      webhookKeys: { keys, anyInGroup: () => undefined, lookup: () => ({ state: 'unknown' }) },
    }) as unknown as StatusFanoutOptions;

  it('while the webhook-keys mirror cannot say and no consumer exists, nothing is created; once a key shows, the gateway reads (and so makes the consumer)', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const fake = withoutConsumer();
      let keys: string[] | undefined;
      const fanout = await startStatusFanout(options(fake, () => keys));
      await vi.advanceTimersByTimeAsync(5_000);
      expect(fake.added).toEqual([]);
      keys = [];
      await vi.advanceTimersByTimeAsync(5_000);
      expect(fake.added).toEqual([]);
      keys = ['acme.e1'];
      await vi.advanceTimersByTimeAsync(1_000);
      await vi.waitFor(() => expect(fake.added).toEqual([WebhookConsumers.STATUS.durable_name]));
      await fanout.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('a registration makes the consumer before its endpoint is stored, whatever the mirror says', async () => {
    const fake = withoutConsumer();
    const fanout = await startStatusFanout(options(fake, () => undefined));
    await fanout.ensure();
    expect(fake.added[0]).toBe(WebhookConsumers.STATUS.durable_name);
    await fanout.stop();
  });
});
