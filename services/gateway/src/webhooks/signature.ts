/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): `webhook-signature` is `v1,<base64
 * HMAC-SHA256>` over `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64 bytes after `whsec_`;
 * several secrets (a rotation's grace period) give several space-separated signatures. node:crypto's HMAC is
 * a dozen lines and native; the tests check it against the `standardwebhooks` package's verifier.
 */
import { createHmac } from 'node:crypto';

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export function signWebhook(
  webhookId: string,
  timestampSeconds: number,
  body: string,
  secrets: readonly string[],
): SignedHeaders {
  const timestamp = String(timestampSeconds);
  const signed = `${webhookId}.${timestamp}.${body}`;
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
    return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`;
  });
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': timestamp,
    'webhook-signature': signatures.join(' '),
  };
}
