import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Forbidden, Unauthorized } from './errors.js';
import { StreamTokenProblem, StreamTokens, streamTokenKey, streamTokenTarget } from './stream-tokens.js';

const TRACE_A = 'a'.repeat(32);
const TRACE_B = 'b'.repeat(32);
const MINUTE = 60_000;
const masterKey = randomBytes(32).toString('base64');

describe('stream tokens', () => {
  it('when a token is checked before it expires, it grants its account and task', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const tokens = new StreamTokens(streamTokenKey(masterKey), 10 * MINUTE, () => now);
    const { token, expiresAt } = tokens.issue('acme', TRACE_A);
    now += 9 * MINUTE;
    expect(tokens.verify(token)).toEqual({ accountId: 'acme', traceId: TRACE_A, expiresAt });
    expect(expiresAt.toISOString()).toBe('2026-01-01T00:10:00.000Z');
  });

  it('when a token is checked at or after its expiry, it is expired', () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const tokens = new StreamTokens(streamTokenKey(masterKey), 10 * MINUTE, () => now);
    const { token } = tokens.issue('acme', TRACE_A);
    now += 10 * MINUTE;
    expect(tokens.verify(token)).toBe(StreamTokenProblem.EXPIRED);
  });

  it('when another gateway derives its key from the same master key, it accepts the token; from another master key, it does not', () => {
    const issued = new StreamTokens(streamTokenKey(masterKey), MINUTE).issue('acme', TRACE_A).token;
    expect(new StreamTokens(streamTokenKey(masterKey), MINUTE).verify(issued)).toMatchObject({
      accountId: 'acme',
    });
    const other = new StreamTokens(streamTokenKey(randomBytes(32).toString('base64')), MINUTE);
    expect(other.verify(issued)).toBe(StreamTokenProblem.BAD_SIGNATURE);
  });

  it("when a token's payload is altered to name another account or task, its signature no longer fits", () => {
    const tokens = new StreamTokens(streamTokenKey(masterKey), MINUTE);
    const [payload, mac] = tokens.issue('acme', TRACE_A).token.split('.') as [string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    for (const change of [{ a: 'beta' }, { t: TRACE_B }, { e: (claims.e as number) + 3600 }]) {
      const forged = Buffer.from(JSON.stringify({ ...claims, ...change })).toString('base64url');
      expect(tokens.verify(`${forged}.${mac}`)).toBe(StreamTokenProblem.BAD_SIGNATURE);
    }
  });

  it('when the text is not a token at all, it is malformed or unsigned, never an exception', () => {
    const tokens = new StreamTokens(streamTokenKey(masterKey), MINUTE);
    for (const text of ['', 'abc', 'a.b.c', '.x', 'x.']) {
      expect(Object.values(StreamTokenProblem)).toContain(tokens.verify(text));
    }
  });

  it('when a valid token is presented for another task, the answer is 403; an expired or forged one, 401', () => {
    let now = Date.now();
    const tokens = new StreamTokens(streamTokenKey(masterKey), MINUTE, () => now);
    const { token } = tokens.issue('acme', TRACE_A);
    expect(streamTokenTarget(tokens, token, TRACE_A)).toEqual({ accountId: 'acme', traceId: TRACE_A });
    expect(streamTokenTarget(tokens, token, TRACE_B)).toBeInstanceOf(Forbidden);
    expect(streamTokenTarget(tokens, `${token}x`, TRACE_A)).toBeInstanceOf(Unauthorized);
    now += MINUTE;
    const expired = streamTokenTarget(tokens, token, TRACE_A);
    expect(expired).toBeInstanceOf(Unauthorized);
    expect((expired as Unauthorized).message).toMatch(/expired/);
  });
});
