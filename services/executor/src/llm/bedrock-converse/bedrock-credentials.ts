/**
 * The AWS credentials of a `bedrock-converse` model, as its vault entry holds them. The model's key entry
 * (`__model_api_key`, `__model_api_key_<i>` for fallback i: whatever `api_key_credential` names) holds one
 * JSON object, so that a key id and its secret always travel, rotate and get sealed together:
 *
 *   {"access_key_id": "AKIA…", "secret_access_key": "…", "session_token": "…", "region": "eu-west-1"}
 *
 * `session_token` (temporary credentials) and `region` (else read from the endpoint's host, else
 * `us-east-1`) are optional. Each part is a secret of its own: {@link credentialSecrets} hands them to the
 * task's scrubber, so a part quoted alone (an error echoing the key id) is scrubbed as the whole is.
 */
import { z } from 'zod';

const AwsCredentialsJson = z.object({
  access_key_id: z.string().min(1),
  secret_access_key: z.string().min(1),
  session_token: z.string().min(1).optional(),
  region: z
    .string()
    .regex(/^[a-z]{2}(-[a-z]+)+-\d+$/)
    .optional(),
});
export type AwsCredentials = z.infer<typeof AwsCredentialsJson>;

/** The credentials in a vault value; undefined when it is not such a JSON object. */
export function parseAwsCredentials(value: string | undefined): AwsCredentials | undefined {
  if (value === undefined || !value.trimStart().startsWith('{')) return undefined;
  try {
    const parsed = AwsCredentialsJson.safeParse(JSON.parse(value));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The parts of a vault value that are secrets on their own (none unless it holds AWS credentials). */
export function credentialSecrets(value: string): string[] {
  const credentials = parseAwsCredentials(value);
  if (credentials === undefined) return [];
  return [credentials.access_key_id, credentials.secret_access_key, credentials.session_token ?? ''].filter(
    (part) => part !== '',
  );
}

/** `bedrock-runtime.eu-west-1.amazonaws.com`, a FIPS or VPC endpoint's host: the region it names. */
export function regionOfEndpoint(baseUrl: string): string | undefined {
  const host = new URL(baseUrl).hostname;
  return /(?:^|\.)([a-z]{2}(?:-[a-z]+)+-\d+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?$/.exec(host)?.[1];
}
