import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeKeySegment } from '../kv-keys.js';
import {
  ACCOUNT_WIDE_SEGMENT,
  accountCredentialKey,
  credentialKey,
  credentialSetPrefix,
} from './credential-record.js';

/** User ids a caller might pick to reach the account-wide set, and arbitrary ones. */
const userIds = [
  '',
  '=',
  ACCOUNT_WIDE_SEGMENT,
  'account',
  '=account',
  '_',
  '-',
  Buffer.from(ACCOUNT_WIDE_SEGMENT, 'base64url').toString('utf8'),
  Buffer.from('account', 'base64').toString('latin1'),
  'user@example.com',
  'é',
  ...Array.from({ length: 2000 }, (_, i) => randomBytes(i % 40).toString(i % 2 === 0 ? 'utf8' : 'latin1')),
];

describe('credential keys', () => {
  it('no user id encodes to the account-wide segment, whatever its bytes', () => {
    for (const userId of userIds) {
      const segment = encodeKeySegment(userId);
      expect(segment).not.toBe(ACCOUNT_WIDE_SEGMENT);
      expect(segment).toMatch(/^[A-Za-z0-9_-]+$/);
      expect(credentialSetPrefix('acme', { userId })).not.toBe(credentialSetPrefix('acme', 'account'));
    }
    // The reserved segment holds a character base64url never writes.
    expect(ACCOUNT_WIDE_SEGMENT).not.toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it("an account-wide key and a user's key of the same name differ, and each names its account", () => {
    expect(accountCredentialKey('acme', 'MODEL_KEY')).toBe(`acme.${ACCOUNT_WIDE_SEGMENT}.TU9ERUxfS0VZ`);
    expect(credentialKey('acme', ACCOUNT_WIDE_SEGMENT, 'MODEL_KEY')).not.toBe(
      accountCredentialKey('acme', 'MODEL_KEY'),
    );
    expect(accountCredentialKey('globex', 'MODEL_KEY')).not.toBe(accountCredentialKey('acme', 'MODEL_KEY'));
  });
});
