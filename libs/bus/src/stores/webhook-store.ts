/**
 * Webhook endpoints in KV `mesh_webhooks` (`<account>.<endpoint id>`), and the dead letters of deliveries in
 * KV `mesh_webhook_dead_letters` (`<account>.<webhook id>`).
 *
 * An endpoint's signing secret (`whsec_<base64 of 32 random bytes>`) is encrypted at rest like a credential
 * (AES-256-GCM under the credentials master key; the additional data is the record's key and the secret's
 * slot, so a ciphertext moved to another endpoint or slot does not decrypt). It is returned in clear only
 * by `create` and `rotateSecret` (shown to the caller once) and by `signingSecrets` (the gateway signing a
 * delivery). A rotation keeps the previous secret for a grace period: deliveries carry a signature under
 * each, so receivers can switch over without losing one.
 */
import { randomBytes } from 'node:crypto';
import {
  TASK_WEBHOOK_EVENTS,
  WebhookDeadLetter,
  WebhookEndpointView,
  type TaskWebhookEvent,
  type WebhookEndpointCreate,
  type WebhookEndpointWithSecret,
} from '@agentmesh/protocol';
import { decryptSecret, encryptSecret } from '@agentmesh/vault';
import type { KV } from '@nats-io/kv';
import { z } from 'zod';
import { decodeJson, encodeJson } from '../json.js';
import { listLatestKeys } from './latest-keys.js';
import { StoredSecret } from './credential-record.js';
import type { CredentialKeys } from './credential-store.js';

const StoredEndpoint = WebhookEndpointView.extend({
  secret: StoredSecret,
  previous_secret: StoredSecret.optional(),
  /** Until when the previous secret still signs. */
  previous_until: z.string().optional(),
});
type StoredEndpoint = z.infer<typeof StoredEndpoint>;

export interface WebhookRekeyReport {
  readonly rekeyed: number;
  readonly alreadyCurrent: number;
  /** Endpoint keys (`<account>.<endpoint id>`) left as they were: no given key opens them, or they changed meanwhile. */
  readonly leftAsTheyWere: readonly string[];
}

/** An endpoint with its clear signing secrets: what the deliverer needs and nothing shows. */
export interface WebhookTarget {
  readonly endpoint: WebhookEndpointView;
  /** The current secret first; a rotated-out one while its grace period lasts. */
  readonly secrets: readonly string[];
}

function newEndpointId(): string {
  return `wh_${randomBytes(12).toString('hex')}`;
}

function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function endpointKey(accountId: string, endpointId: string): string {
  return `${accountId}.${endpointId}`;
}

function view(stored: StoredEndpoint): WebhookEndpointView {
  const { secret: _secret, previous_secret: _previous, previous_until: _until, ...shown } = stored;
  return shown;
}

export class WebhookStore {
  readonly #decryptKeys;

  constructor(
    private readonly kv: KV,
    private readonly keys: CredentialKeys,
  ) {
    this.#decryptKeys = [keys.current, ...(keys.previous ?? [])];
  }

  async create(accountId: string, input: WebhookEndpointCreate): Promise<WebhookEndpointWithSecret> {
    const id = newEndpointId();
    const key = endpointKey(accountId, id);
    const secret = newSigningSecret();
    const endpoint: WebhookEndpointView = {
      id,
      account_id: accountId,
      url: input.url,
      events: [...new Set<TaskWebhookEvent>(input.events ?? TASK_WEBHOOK_EVENTS)],
      ...(input.description === undefined ? {} : { description: input.description }),
      created_at: new Date().toISOString(),
    };
    const stored: StoredEndpoint = {
      ...endpoint,
      secret: encryptSecret(secret, `${key}#current`, this.keys.current),
    };
    await this.kv.create(key, encodeJson(stored));
    return { ...endpoint, secret };
  }

  async get(accountId: string, endpointId: string): Promise<WebhookEndpointView | undefined> {
    const stored = await this.#read(accountId, endpointId);
    return stored === undefined ? undefined : view(stored.value);
  }

  async list(accountId: string): Promise<WebhookEndpointView[]> {
    const keys = await listLatestKeys(this.kv, `${accountId}.*`);
    const found: WebhookEndpointView[] = [];
    for (const key of keys.sort()) {
      const stored = await this.#read(accountId, key.slice(accountId.length + 1));
      if (stored !== undefined) found.push(view(stored.value));
    }
    return found;
  }

  async delete(accountId: string, endpointId: string): Promise<boolean> {
    if ((await this.#read(accountId, endpointId)) === undefined) return false;
    await this.kv.delete(endpointKey(accountId, endpointId));
    return true;
  }

  /** A new secret, shown once; the old one keeps signing for `previousValidMs` (0: not at all). */
  async rotateSecret(
    accountId: string,
    endpointId: string,
    previousValidMs: number,
  ): Promise<WebhookEndpointWithSecret | undefined> {
    const stored = await this.#read(accountId, endpointId);
    if (stored === undefined) return undefined;
    const key = endpointKey(accountId, endpointId);
    const oldSecret = decryptSecret(stored.value.secret, `${key}#current`, this.#decryptKeys);
    const secret = newSigningSecret();
    const now = Date.now();
    const { previous_secret: _p, previous_until: _u, ...rest } = stored.value;
    const next: StoredEndpoint = {
      ...rest,
      secret: encryptSecret(secret, `${key}#current`, this.keys.current),
      secret_rotated_at: new Date(now).toISOString(),
      ...(previousValidMs > 0
        ? {
            previous_secret: encryptSecret(oldSecret, `${key}#previous`, this.keys.current),
            previous_until: new Date(now + previousValidMs).toISOString(),
          }
        : {}),
    };
    // Compare-and-set: of two rotations at once, one wins and the other reads again.
    await this.kv.update(key, encodeJson(next), stored.revision);
    return { ...view(next), secret };
  }

  /** The endpoint and its clear signing secrets, for one delivery; undefined once the endpoint is gone. */
  async target(accountId: string, endpointId: string, now = Date.now()): Promise<WebhookTarget | undefined> {
    const stored = await this.#read(accountId, endpointId);
    if (stored === undefined) return undefined;
    const key = endpointKey(accountId, endpointId);
    const secrets = [decryptSecret(stored.value.secret, `${key}#current`, this.#decryptKeys)];
    const { previous_secret: previous, previous_until: until } = stored.value;
    if (previous !== undefined && until !== undefined && Date.parse(until) > now) {
      secrets.push(decryptSecret(previous, `${key}#previous`, this.#decryptKeys));
    }
    return { endpoint: view(stored.value), secrets };
  }

  /**
   * Re-encrypts every endpoint's secrets not under `keys.current` (a master key rotation, with
   * `rekey-credentials`): compare-and-set per endpoint; one that does not decrypt is reported and kept.
   */
  async rekey(): Promise<WebhookRekeyReport> {
    let rekeyed = 0;
    let alreadyCurrent = 0;
    const leftAsTheyWere: string[] = [];
    for (const key of (await listLatestKeys(this.kv, '*.*')).sort()) {
      const [accountId = '', endpointId = ''] = key.split('.');
      const outcome = await this.#rekeyOne(accountId, endpointId).catch(() => 'failed' as const);
      if (outcome === 'rekeyed') rekeyed++;
      else if (outcome === 'current') alreadyCurrent++;
      else if (outcome === 'failed') leftAsTheyWere.push(key);
    }
    return { rekeyed, alreadyCurrent, leftAsTheyWere };
  }

  async #rekeyOne(accountId: string, endpointId: string): Promise<'rekeyed' | 'current' | 'gone'> {
    const stored = await this.#read(accountId, endpointId);
    if (stored === undefined) return 'gone';
    const { secret, previous_secret: previous } = stored.value;
    const current = this.keys.current;
    if (secret.kid === current.kid && (previous === undefined || previous.kid === current.kid))
      return 'current';
    const key = endpointKey(accountId, endpointId);
    const reseal = (sealed: typeof secret, slot: string) =>
      encryptSecret(decryptSecret(sealed, `${key}#${slot}`, this.#decryptKeys), `${key}#${slot}`, current);
    const next: StoredEndpoint = {
      ...stored.value,
      secret: reseal(secret, 'current'),
      ...(previous === undefined ? {} : { previous_secret: reseal(previous, 'previous') }),
    };
    await this.kv.update(key, encodeJson(next), stored.revision);
    return 'rekeyed';
  }

  async #read(
    accountId: string,
    endpointId: string,
  ): Promise<{ value: StoredEndpoint; revision: number } | undefined> {
    const key = endpointKey(accountId, endpointId);
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return {
      value: decodeJson(StoredEndpoint, entry.value, `mesh_webhooks/${key}`),
      revision: entry.revision,
    };
  }
}

/** A task's own webhook (`webhook` of its submission), kept until its final event is queued. */
const TaskWebhook = z.object({
  url: z.string(),
  events: z.array(z.string()),
  /** The registered endpoint on the same origin: its secret signs. */
  endpoint_id: z.string(),
});
export type TaskWebhook = z.infer<typeof TaskWebhook>;

/**
 * Tasks' own webhooks in the same bucket as the endpoints, under `<account>.task.<trace id>`: three tokens,
 * so an endpoint listing (`<account>.*`) never sees them.
 */
export class TaskWebhookStore {
  constructor(private readonly kv: KV) {}

  async put(accountId: string, traceId: string, webhook: TaskWebhook): Promise<void> {
    await this.kv.put(`${accountId}.task.${traceId}`, encodeJson(webhook));
  }

  async get(accountId: string, traceId: string): Promise<TaskWebhook | undefined> {
    const key = `${accountId}.task.${traceId}`;
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(TaskWebhook, entry.value, `mesh_webhooks/${key}`);
  }

  async delete(accountId: string, traceId: string): Promise<void> {
    await this.kv.delete(`${accountId}.task.${traceId}`);
  }
}

/** Deliveries out of attempts, one per `(account, webhook id)`, until re-driven or dropped. */
export class WebhookDeadLetterStore {
  constructor(private readonly kv: KV) {}

  async put(letter: WebhookDeadLetter): Promise<void> {
    await this.kv.put(`${letter.delivery.account_id}.${letter.delivery.webhook_id}`, encodeJson(letter));
  }

  async get(accountId: string, webhookId: string): Promise<WebhookDeadLetter | undefined> {
    const key = `${accountId}.${webhookId}`;
    const entry = await this.kv.get(key);
    if (!entry || entry.operation !== 'PUT') return undefined;
    return decodeJson(WebhookDeadLetter, entry.value, `mesh_webhook_dead_letters/${key}`);
  }

  /** One account's letters (or every account's), newest first. */
  async list(accountId?: string, limit = 100): Promise<WebhookDeadLetter[]> {
    const keys = await listLatestKeys(this.kv, accountId === undefined ? '>' : `${accountId}.*`);
    const letters: WebhookDeadLetter[] = [];
    for (const key of keys) {
      const [account = '', webhookId = ''] = key.split('.');
      const letter = await this.get(account, webhookId);
      if (letter !== undefined) letters.push(letter);
    }
    return letters.sort((a, b) => b.dead_at.localeCompare(a.dead_at)).slice(0, limit);
  }

  async remove(accountId: string, webhookId: string): Promise<boolean> {
    if ((await this.get(accountId, webhookId)) === undefined) return false;
    await this.kv.delete(`${accountId}.${webhookId}`);
    return true;
  }
}
