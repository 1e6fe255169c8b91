/**
 * Deep, key-based redaction of secrets in objects about to be logged. pino's path-based redaction
 * cannot reach a secret at an unknown depth (a vault inside a task inside an event), so every logged
 * object passes through here: any property whose name is a secret's name has its value replaced.
 */

/** Property names (compared case-insensitively, `-` and `_` ignored) whose values are never logged. */
export const SECRET_KEYS: readonly string[] = [
  'vault',
  'api_key',
  'apikey',
  'x-api-key',
  'credentials',
  'credential',
  'secret',
  'client_secret',
  'password',
  'passwd',
  'authorization',
  'proxy-authorization',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'cookie',
  'set-cookie',
  'master_key',
  'private_key',
  // NATS logins (the runtime's NATS_* variables and nats.js option names); NATS_URL may carry
  // `user:password@`, so the whole value is withheld.
  'pass',
  'nats_password',
  'nats_token',
  'auth_token',
  'nkey_seed',
  'nats_nkey_seed',
  'nats_url',
];

export const REDACTED = '[redacted]';

const normalise = (key: string): string => key.toLowerCase().replace(/[-_]/g, '');
const secretKeys = new Set(SECRET_KEYS.map(normalise));

export function isSecretKey(key: string): boolean {
  return secretKeys.has(normalise(key));
}

const MAX_DEPTH = 12;

/**
 * Query parameters that carry a credential in a URL (a stream token on an SSE URL, an API key some
 * clients put in the query): a logged URL keeps its path and drops their values.
 */
const SECRET_QUERY_PARAMETER = /([?&](?:token|access_token|api_key|apikey|key)=)[^&#\s"']*/gi;

/** `text` with the values of credential-carrying query parameters replaced by {@link REDACTED}. */
export function redactSecretQueryParameters(text: string): string {
  return text.includes('=') ? text.replace(SECRET_QUERY_PARAMETER, `$1${REDACTED}`) : text;
}

/**
 * Returns a copy of `value` with every secret-named property's value replaced by {@link REDACTED}, and
 * credential query parameters taken out of strings (URLs) at any depth.
 */
export function redactSecrets(value: unknown, depth = 0, seen = new WeakSet<object>()): unknown {
  if (typeof value === 'string') return redactSecretQueryParameters(value);
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Error) return value; // pino's err serializer handles errors
  if (seen.has(value) || depth > MAX_DEPTH) return '[…]';
  seen.add(value);
  if (Array.isArray(value)) return value.map((item) => redactSecrets(item, depth + 1, seen));
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return `[${value.byteLength} bytes]`;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    out[key] = isSecretKey(key) ? REDACTED : redactSecrets(item, depth + 1, seen);
  }
  return out;
}
