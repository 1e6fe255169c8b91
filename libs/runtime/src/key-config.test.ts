import { randomBytes } from 'node:crypto';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { describe, expect, it } from 'vitest';
import { keyIdSchema, masterKeyListSchema, masterKeySchema, vaultPublicKeySchema } from './key-config.js';

const key32 = (): string => randomBytes(32).toString('base64');

describe('key config parsers', () => {
  it('a master key of 32 bytes in base64 is read; a shorter one is refused without echoing it', () => {
    const good = key32();
    expect(masterKeySchema.parse(good)).toBe(good);
    const short = randomBytes(16).toString('base64');
    const result = masterKeySchema.safeParse(short);
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toContain('must be 32 random bytes in base64');
    expect(JSON.stringify(result.error?.issues)).not.toContain(short);
  });

  it('a list of older master keys is read as kid and key; a bad entry is named by its position, never its value', () => {
    const [a, b] = [key32(), key32()];
    expect(masterKeyListSchema().parse(` old-1:${a} , old.2:${b} `)).toEqual([
      { kid: 'old-1', key: a },
      { kid: 'old.2', key: b },
    ]);
    const result = masterKeyListSchema().safeParse(`old:${a},no-colon-secret`);
    expect(result.error?.issues.map((issue) => issue.message)).toEqual([
      'entry 2 must be kid:base64 with a 32-byte key (key ids: A-Z a-z 0-9 . _ -)',
    ]);
    expect(JSON.stringify(result.error?.issues)).not.toContain('no-colon-secret');
    expect(JSON.stringify(result.error?.issues)).not.toContain(a);
  });

  it('an empty list is no older keys, unless at least one is required', () => {
    expect(masterKeyListSchema().parse('')).toEqual([]);
    const result = masterKeyListSchema({ atLeastOne: true }).safeParse(' , ');
    expect(result.error?.issues.map((issue) => issue.message)).toEqual(['names no key']);
  });

  it('a key id outside A-Z a-z 0-9 . _ - is refused', () => {
    expect(keyIdSchema.parse('master-2026.1_a')).toBe('master-2026.1_a');
    expect(keyIdSchema.safeParse('master key').success).toBe(false);
    expect(keyIdSchema.safeParse('').success).toBe(false);
  });

  it('a vault public key must be a raw X25519 key in base64url', () => {
    const { publicKey } = generateVaultKeyPair('executors-1');
    expect(vaultPublicKeySchema.parse(publicKey)).toBe(publicKey);
    const result = vaultPublicKeySchema.safeParse('abc');
    expect(result.error?.issues[0]?.message).toBe(
      'must be a raw 32-byte X25519 public key in base64url (43 characters)',
    );
  });
});
