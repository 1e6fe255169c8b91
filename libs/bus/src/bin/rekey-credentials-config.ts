/**
 * Configuration of the credential re-encryption run (rekey-credentials.ts): the runtime's NATS variables
 * and the master keys under the same names the gateway and the assembler read them, so one environment
 * serves the services and this run during a rotation. Keys come from the environment only, never from
 * arguments, and no error message repeats a key.
 */
import { baseConfigSchema, keyIdSchema, masterKeyListSchema, masterKeySchema } from '@agentmesh/runtime';
import type { z } from 'zod';

export const rekeyCredentialsConfigSchema = baseConfigSchema.extend({
  CREDENTIALS_MASTER_KEY: masterKeySchema.describe(
    'The new master key (32 bytes, base64) every stored credential is re-encrypted under (secret)',
  ),
  CREDENTIALS_MASTER_KEY_ID: keyIdSchema.describe('Id of the new master key, recorded with each ciphertext'),
  CREDENTIALS_PREVIOUS_KEYS: masterKeyListSchema({ atLeastOne: true }).describe(
    'The old master keys the stored credentials are under now: comma-separated kid:base64 (secret)',
  ),
});

export type RekeyCredentialsConfig = z.infer<typeof rekeyCredentialsConfigSchema>;
