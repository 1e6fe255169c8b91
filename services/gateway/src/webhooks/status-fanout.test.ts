import { describe, expect, it } from 'vitest';
import { webhookKeysOf } from './status-fanout.js';

describe("what the webhook keys say of a finished task's deliveries", () => {
  const trace = 'ab'.repeat(16);

  it('an account without endpoints or a webhook of the task needs no read; another account’s keys do not count', () => {
    expect(webhookKeysOf(['beta.e1', `beta.task.${trace}`, 'acme2.e1'], 'acme', trace)).toEqual({
      endpoints: false,
      own: false,
    });
  });

  it("an endpoint of the account, or the task's own webhook, is found; another task's webhook is not an endpoint", () => {
    expect(webhookKeysOf(['acme.e1'], 'acme', trace)).toEqual({ endpoints: true, own: false });
    expect(webhookKeysOf([`acme.task.${trace}`, `acme.task.${'cd'.repeat(16)}`], 'acme', trace)).toEqual({
      endpoints: false,
      own: true,
    });
  });

  it('without the keys (the mirror cannot say), nothing is known and the bucket is read', () => {
    expect(webhookKeysOf(undefined, 'acme', trace)).toBeUndefined();
  });
});
