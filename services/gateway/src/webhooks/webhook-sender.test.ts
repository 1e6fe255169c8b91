import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookReceiver, type WebhookReceiver } from '../__fixtures__/webhook-receiver.js';
import { signWebhook } from './signature.js';
import { WebhookSender } from './webhook-sender.js';

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const OLD_SECRET = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
const ID = 'msg_0123456789abcdef0123456789abcdef';

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver.close();
});

describe('signWebhook', () => {
  it('when signed with two secrets (a rotation), standardwebhooks verifies under either', () => {
    const body = JSON.stringify({ type: 'task.completed', data: { trace_id: 't1' } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook(ID, now, body, [SECRET, OLD_SECRET]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(JSON.parse(body));
    expect(new Webhook(OLD_SECRET).verify(body, headers)).toEqual(JSON.parse(body));
    const other = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
    expect(() => new Webhook(other).verify(body, headers)).toThrow();
    expect(() => new Webhook(SECRET).verify(`${body} `, headers)).toThrow();
  });
});

describe('WebhookSender', () => {
  it('when the receiver answers 204, the POST arrived signed and verifies with standardwebhooks', async () => {
    receiver.secret('/ok', SECRET);
    const sender = new WebhookSender({ allowHosts: ['127.0.0.1'], connectTimeoutMs: 1000, timeoutMs: 2000 });
    const outcome = await sender.send(`${receiver.url}/ok`, ID, '{"type":"webhook.test"}', [SECRET]);
    await sender.close();
    expect(outcome).toEqual({ ok: true, status: 204 });
    const got = receiver.received.filter((r) => r.path === '/ok');
    expect(got).toHaveLength(1);
    expect(got[0]).toMatchObject({ id: ID, verified: true, body: '{"type":"webhook.test"}' });
  });

  it('when the receiver hangs, the attempt fails on its timeout as a retryable failure', async () => {
    receiver.plan('/hang', { hang: true });
    const sender = new WebhookSender({ allowHosts: ['127.0.0.1'], connectTimeoutMs: 1000, timeoutMs: 300 });
    const outcome = await sender.send(`${receiver.url}/hang`, ID, '{}', [SECRET]);
    await sender.close();
    expect(outcome.ok).toBe(false);
    expect(outcome).toMatchObject({ permanent: false });
    expect(receiver.received.some((r) => r.path === '/hang')).toBe(true);
  });

  it('when loopback is not allow-listed, a delivery to 127.0.0.1 is refused before any request, permanently', async () => {
    const before = receiver.received.length;
    const sender = new WebhookSender({ allowHosts: [], connectTimeoutMs: 1000, timeoutMs: 1000 });
    const outcome = await sender.send(`${receiver.url}/ok`, ID, '{}', [SECRET]);
    await sender.close();
    expect(outcome).toMatchObject({ ok: false, permanent: true });
    expect(!outcome.ok && outcome.error).toMatch(/loopback address/);
    expect(receiver.received.length).toBe(before);
  });

  it('when a host name resolves to a private address (DNS rebinding after registration), the connection is refused', async () => {
    const sender = new WebhookSender({
      allowHosts: [],
      connectTimeoutMs: 1000,
      timeoutMs: 1000,
      resolveHost: async () => [{ address: '10.0.0.7', family: 4 }],
    });
    const outcome = await sender.send('http://hooks.example.test/x', ID, '{}', [SECRET]);
    await sender.close();
    expect(outcome).toMatchObject({ ok: false, permanent: true });
    expect(!outcome.ok && outcome.error).toMatch(
      /private address \(hooks\.example\.test resolves to 10\.0\.0\.7\)/,
    );
  });

  it.each([
    ['http://169.254.169.254/latest/meta-data', /metadata/],
    ['http://10.1.2.3/hook', /private address/],
    ['http://[::1]:8080/hook', /loopback/],
    ['ftp://example.com/hook', /scheme ftp: is not allowed/],
    ['http://metadata.google.internal/x', /metadata host/],
  ])('registration check: %s is refused (%s)', async (url, reason) => {
    const sender = new WebhookSender({ allowHosts: [], connectTimeoutMs: 1000, timeoutMs: 1000 });
    await expect(sender.checkTarget(url)).rejects.toThrow(reason);
    await sender.close();
  });
});
