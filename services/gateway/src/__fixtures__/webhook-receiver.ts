/**
 * A webhook receiver on 127.0.0.1 for tests: every POST is recorded and its Standard Webhooks signature
 * checked with the `standardwebhooks` package (the reference implementation, not our signer), under the
 * secret registered for its path. Per path it can fail the first N requests (500) or hang (never answer
 * until the receiver closes).
 */
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  path: string;
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The signature verified under the path's secret (standardwebhooks, timestamp tolerance included). */
  verified: boolean;
  /** What the receiver answered (undefined while hanging). */
  status?: number;
}

export interface PathPlan {
  /** Answer 500 to this many requests first. */
  failFirst?: number;
  /** Never answer. */
  hang?: boolean;
}

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port>` */
  url: string;
  received: ReceivedWebhook[];
  /** Requests being held by a hanging path right now. */
  hanging(): number;
  /** Most requests held at once by hanging paths, per path. */
  maxHanging(path: string): number;
  plan(path: string, plan: PathPlan): void;
  secret(path: string, secret: string): void;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  const plans = new Map<string, PathPlan>();
  const secrets = new Map<string, string>();
  const seen = new Map<string, number>();
  const held = new Map<string, Set<ServerResponse>>();
  const maxHeld = new Map<string, number>();

  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const body = Buffer.concat(chunks).toString('utf8');
      const header = (name: string): string => String(request.headers[name] ?? '');
      let verified = false;
      const secret = secrets.get(path);
      if (secret !== undefined) {
        try {
          new Webhook(secret).verify(body, {
            'webhook-id': header('webhook-id'),
            'webhook-timestamp': header('webhook-timestamp'),
            'webhook-signature': header('webhook-signature'),
          });
          verified = true;
        } catch {
          verified = false;
        }
      }
      const record: ReceivedWebhook = {
        path,
        id: header('webhook-id'),
        timestamp: header('webhook-timestamp'),
        signature: header('webhook-signature'),
        body,
        verified,
      };
      received.push(record);
      const plan = plans.get(path) ?? {};
      if (plan.hang) {
        const set = held.get(path) ?? new Set<ServerResponse>();
        held.set(path, set);
        set.add(response);
        maxHeld.set(path, Math.max(maxHeld.get(path) ?? 0, set.size));
        response.on('close', () => set.delete(response));
        return;
      }
      const count = (seen.get(path) ?? 0) + 1;
      seen.set(path, count);
      record.status = count <= (plan.failFirst ?? 0) ? 500 : 204;
      response.statusCode = record.status;
      response.end(record.status === 500 ? 'receiver failing on purpose' : undefined);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    hanging: () => [...held.values()].reduce((sum, set) => sum + set.size, 0),
    maxHanging: (path) => maxHeld.get(path) ?? 0,
    plan: (path, plan) => void plans.set(path, plan),
    secret: (path, secret) => void secrets.set(path, secret),
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close').catch(() => undefined);
    },
  };
}
