// The client-credentials grant (RFC 6749 §4.4): one POST to the token endpoint, through the same outbound
// guard as every tool request. The client authenticates with HTTP Basic unless the tool says `body`.
import type { OAuth2Client } from './auth.js';
import type { OAuth2AccessToken } from './oauth2-token-cache.js';
import {
  describeTarget,
  sendOutbound,
  statusLine,
  type OutboundResponse,
  type OutboundTransport,
} from './outbound-request.js';
import type { HttpRequestPlan } from './request-plan.js';
import { readBoundedBody, type BoundedBody } from './response-reader.js';
import { SecretScrubber } from './secret-scrubber.js';
import { OAuth2TokenError } from '../tool-errors.js';

/** Token responses are small; anything bigger is not one. */
const TOKEN_RESPONSE_LIMIT_BYTES = 64 * 1024;
const ERROR_EXCERPT_CHARS = 500;

export async function requestOAuth2Token(
  transport: OutboundTransport,
  client: OAuth2Client,
  signal: AbortSignal,
): Promise<OAuth2AccessToken> {
  const plan = tokenRequestPlan(client);
  let response: OutboundResponse;
  let body: BoundedBody;
  try {
    // A token endpoint that redirects is not followed: the request carries the client secret.
    response = await sendOutbound(transport, plan, signal, { followRedirects: false });
    body = await readBoundedBody(response.body, TOKEN_RESPONSE_LIMIT_BYTES);
  } catch (error) {
    if (!signal.aborted) throw error;
    throw new OAuth2TokenError(`the OAuth2 token endpoint (${describeTarget(plan)}) did not answer in time`, {
      cause: error,
    });
  }
  const { text, truncated } = body;
  if (response.status < 200 || response.status > 299) {
    // The endpoint may echo what it got: the client's credentials. Scrub before cutting, so no part survives.
    const scrubber = new SecretScrubber([
      client.clientId,
      client.clientSecret,
      clientBasicCredential(client),
    ]);
    const scrubbed = scrubber.scrub(text);
    const excerpt =
      scrubbed.length > ERROR_EXCERPT_CHARS || truncated
        ? `${scrubber.scrubCut(scrubbed.slice(0, ERROR_EXCERPT_CHARS))}…`
        : scrubbed;
    throw new OAuth2TokenError(
      `the OAuth2 token request (${describeTarget(plan)}) failed with ${statusLine(response.status)}`,
      { detail: { status: response.status, body: excerpt } },
    );
  }
  return parseTokenResponse(truncated ? '' : text, plan);
}

function tokenRequestPlan(client: OAuth2Client): HttpRequestPlan {
  const { config, clientId, clientSecret } = client;
  const form = new URLSearchParams({ grant_type: config.grant_type ?? 'client_credentials' });
  if (config.scopes !== undefined && config.scopes.length > 0) form.set('scope', config.scopes.join(' '));
  if (config.audience !== undefined) form.set('audience', config.audience);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'content-type': 'application/x-www-form-urlencoded',
  };
  if (config.client_auth === 'body') {
    form.set('client_id', clientId);
    form.set('client_secret', clientSecret);
  } else {
    headers.authorization = `Basic ${clientBasicCredential(client)}`;
  }
  return {
    method: 'POST',
    url: new URL(config.token_url),
    headers,
    body: form.toString(),
    credentialHeaders: new Set(['authorization']),
  };
}

/** The Basic credential the client authenticates with (a secret: the runner scrubs it like vault values). */
export function clientBasicCredential(client: OAuth2Client): string {
  // RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and base64-encoded.
  const pair = `${formEncode(client.clientId)}:${formEncode(client.clientSecret)}`;
  return Buffer.from(pair).toString('base64');
}

function parseTokenResponse(text: string, plan: HttpRequestPlan): OAuth2AccessToken {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const record = (parsed ?? {}) as Record<string, unknown>;
  const accessToken = record.access_token;
  if (typeof accessToken !== 'string' || accessToken === '') {
    throw new OAuth2TokenError(
      `the OAuth2 token endpoint (${describeTarget(plan)}) returned no access_token`,
    );
  }
  const expiresIn = Number(record.expires_in);
  return record.expires_in !== undefined && Number.isFinite(expiresIn)
    ? { accessToken, expiresInSeconds: expiresIn }
    : { accessToken };
}

function formEncode(value: string): string {
  return new URLSearchParams({ v: value }).toString().slice(2);
}
