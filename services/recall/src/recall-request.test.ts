import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { InvalidRecallRequestError } from './recall-errors.js';
import { parseRecallRequest } from './recall-request.js';

const encode = (value: unknown) =>
  new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value));
const account = (id?: string, type?: string) => {
  const h = headers();
  if (id !== undefined) h.set('X-Account-Id', id);
  if (type !== undefined) h.set('x-account-type', type);
  return h;
};
const BODY = { kn_id: 'kn', at_id: 'at', unique_identity: { disease_id: 'd1' } };

function refusal(run: () => unknown): InvalidRecallRequestError {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidRecallRequestError) return error;
    throw error;
  }
  throw new Error('the request was accepted');
}

describe('recall requests over NATS', () => {
  it('when the account headers are present (any case), the account comes from them', () => {
    expect(parseRecallRequest(encode(BODY), account('acct-1', 'user'))).toMatchObject({
      account_id: 'acct-1',
      account_type: 'user',
      unique_identity: { disease_id: 'd1' },
    });
  });

  it('when an account header is missing or empty, the request is INVALID_REQUEST naming the header', () => {
    const missingType = refusal(() => parseRecallRequest(encode(BODY), account('acct-1')));
    expect(missingType.message).toBe('the x-account-type header is required');
    const none = refusal(() =>
      parseRecallRequest(encode({ ...BODY, account_id: 'a', account_type: 'u' }), undefined),
    );
    expect(none.detail).toEqual({ missing_headers: ['x-account-id', 'x-account-type'] });
    expect(refusal(() => parseRecallRequest(encode(BODY), account(' ', 'user'))).code).toBe(
      'INVALID_REQUEST',
    );
  });

  it('when the body names another account than the headers, the request is refused', () => {
    const error = refusal(() =>
      parseRecallRequest(encode({ ...BODY, account_id: 'other' }), account('acct-1', 'user')),
    );
    expect(error.message).toMatch(/account_id/);
    expect(
      parseRecallRequest(encode({ ...BODY, account_id: 'acct-1' }), account('acct-1', 'user')).account_id,
    ).toBe('acct-1');
  });

  it('when the body is not JSON, not an object, or its identity is malformed, the error says where', () => {
    expect(refusal(() => parseRecallRequest(encode('{nope'), account('a', 'u'))).message).toMatch(/JSON/);
    expect(refusal(() => parseRecallRequest(encode([1]), account('a', 'u'))).message).toMatch(/object/);
    const bad = refusal(() =>
      parseRecallRequest(encode({ ...BODY, unique_identity: { disease_id: null } }), account('a', 'u')),
    );
    expect(bad.message).toMatch(/^unique_identity\.disease_id: /);
  });
});
