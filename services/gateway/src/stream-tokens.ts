/**
 * Stream tokens: what a browser's EventSource, which cannot send an API key, presents as `?token=` on
 * one task's event stream. A token names one account and one task and an expiry, and is signed with
 * HMAC-SHA256 under a key derived from the credentials master key, so every gateway instance sharing
 * that key accepts a token any of them issued, and no new secret needs configuring. It opens that
 * task's event stream and nothing else; an expired, altered or foreign token opens nothing.
 *
 * Form: `<payload>.<mac>`, both base64url; payload = JSON `{a: account, t: trace_id, e: expiry (unix s)}`.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { TraceIdInput } from '@agentmesh/protocol';
import { z } from 'zod';
import { Forbidden, InvalidRequest, type Rejection, Unauthorized } from './errors.js';

export interface StreamGrant {
  accountId: string;
  traceId: string;
  expiresAt: Date;
}

/** Why a presented token opens nothing. */
export const StreamTokenProblem = {
  MALFORMED: 'malformed',
  BAD_SIGNATURE: 'bad_signature',
  EXPIRED: 'expired',
} as const;
export type StreamTokenProblem = (typeof StreamTokenProblem)[keyof typeof StreamTokenProblem];

const Payload = z.strictObject({ a: z.string().min(1), t: z.string().min(1), e: z.int().positive() });

/** The signing key, derived (HKDF-SHA256) from the base64 credentials master key. */
export function streamTokenKey(masterKey: string): Buffer {
  return Buffer.from(
    hkdfSync('sha256', Buffer.from(masterKey, 'base64'), Buffer.alloc(0), 'agentmesh/stream-token/v1', 32),
  );
}

export class StreamTokens {
  private readonly now: () => number;

  constructor(
    private readonly key: Buffer,
    private readonly ttlMs: number,
    now?: () => number,
  ) {
    this.now = now ?? Date.now;
  }

  issue(accountId: string, traceId: string): { token: string; expiresAt: Date } {
    // Whole seconds, rounded down: a token never outlives its TTL.
    const expiry = Math.floor((this.now() + this.ttlMs) / 1000);
    const payload = Buffer.from(JSON.stringify({ a: accountId, t: traceId, e: expiry })).toString(
      'base64url',
    );
    return { token: `${payload}.${this.mac(payload)}`, expiresAt: new Date(expiry * 1000) };
  }

  verify(token: string): StreamGrant | StreamTokenProblem {
    const parts = token.split('.');
    if (parts.length !== 2 || !parts[0] || !parts[1]) return StreamTokenProblem.MALFORMED;
    const [payload, mac] = parts as [string, string];
    // Compared as text: base64url decoding ignores stray bits, and a token has one spelling only.
    const expected = Buffer.from(this.mac(payload), 'ascii');
    const presented = Buffer.from(mac, 'ascii');
    if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
      return StreamTokenProblem.BAD_SIGNATURE;
    }
    let decoded: z.infer<typeof Payload>;
    try {
      const parsed = Payload.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
      if (!parsed.success) return StreamTokenProblem.MALFORMED;
      decoded = parsed.data;
    } catch {
      return StreamTokenProblem.MALFORMED;
    }
    if (decoded.e * 1000 <= this.now()) return StreamTokenProblem.EXPIRED;
    return { accountId: decoded.a, traceId: decoded.t, expiresAt: new Date(decoded.e * 1000) };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(`stream-token/v1|${payload}`).digest('base64url');
  }
}

/**
 * The task a `?token=` opens, when it opens the one in the path: 401 for a token that is malformed,
 * altered, signed under another key or expired; 403 for a valid token of another task.
 */
export function streamTokenTarget(
  tokens: StreamTokens,
  token: string,
  traceIdParam: string,
): { accountId: string; traceId: string } | Rejection {
  const grant = tokens.verify(token);
  if (grant === StreamTokenProblem.EXPIRED) {
    return new Unauthorized(
      'the stream token has expired: ask for a new one (POST /v1/tasks/{id}/stream-token)',
    );
  }
  if (typeof grant === 'string') return new Unauthorized('invalid stream token');
  const traceId = TraceIdInput.safeParse(traceIdParam);
  if (!traceId.success) return InvalidRequest.fromZod(traceId.error, 'trace_id');
  if (traceId.data !== grant.traceId) return new Forbidden("the stream token opens another task's events");
  return { accountId: grant.accountId, traceId: grant.traceId };
}
