/**
 * Configuration of the credential re-encryption run (rekey-credentials.ts): the runtime's NATS variables
 * and the master keys under the same names the gateway and the assembler read them, so one environment
 * serves the services and this run during a rotation. Keys come from the environment only, never from
 * arguments, and no error message repeats a key.
 */
import { baseConfigSchema } from '@agentmesh/runtime';
import type { MasterKey } from '@agentmesh/vault';
import { z } from 'zod';

const KEY_ID = /^[A-Za-z0-9._-]{1,128}$/;
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

function isMasterKeyMaterial(value: string): boolean {
  return BASE64.test(value) && Buffer.from(value, 'base64').length === 32;
}

/** `kid:base64,kid:base64` → master keys; each bad entry is reported by its position, never its value. */
const MasterKeyList = z.string().transform((raw, ctx): MasterKey[] => {
  const keys: MasterKey[] = [];
  raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .forEach((entry, index) => {
      const colon = entry.indexOf(':');
      const kid = colon < 0 ? '' : entry.slice(0, colon);
      const key = colon < 0 ? '' : entry.slice(colon + 1);
      if (!KEY_ID.test(kid) || !isMasterKeyMaterial(key)) {
        ctx.addIssue({
          code: 'custom',
          message: `entry ${index + 1} must be kid:base64 with a 32-byte key (key ids: A-Z a-z 0-9 . _ -)`,
        });
        return;
      }
      keys.push({ kid, key });
    });
  if (keys.length === 0) ctx.addIssue({ code: 'custom', message: 'names no key' });
  return keys;
});

export const rekeyCredentialsConfigSchema = baseConfigSchema.extend({
  CREDENTIALS_MASTER_KEY: z
    .string()
    .refine(isMasterKeyMaterial, 'must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)')
    .describe('The new master key (32 bytes, base64) every stored credential is re-encrypted under (secret)'),
  CREDENTIALS_MASTER_KEY_ID: z
    .string()
    .regex(KEY_ID, 'must be 1-128 characters of A-Z, a-z, 0-9, ".", "_" or "-"')
    .describe('Id of the new master key, recorded with each ciphertext'),
  CREDENTIALS_PREVIOUS_KEYS: MasterKeyList.describe(
    'The old master keys the stored credentials are under now: comma-separated kid:base64 (secret)',
  ),
});

export type RekeyCredentialsConfig = z.infer<typeof rekeyCredentialsConfigSchema>;
