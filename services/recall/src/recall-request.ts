/**
 * Reading a `mesh.recall.actions` request: a JSON body `{kn_id, at_id, unique_identity | unique_identities}`
 * and the caller's account in the `x-account-id` / `x-account-type` headers (seed 004's headers, required).
 *
 * The headers are authoritative: they are what NATS permissions can vouch for and what is passed upstream.
 * The protocol's `RecallRequest` also has `account_id` / `account_type` in the body; they may be left out,
 * and when given they must name the same account as the headers, else the request is refused.
 */
import { RecallRequest } from '@agentmesh/protocol';
import { Match, type MsgHdrs } from '@nats-io/transport-node';
import { InvalidRecallRequestError } from './recall-errors.js';
import { ACCOUNT_ID_HEADER, ACCOUNT_TYPE_HEADER } from './upstream/account-headers.js';
import { isDotSegmentId } from './upstream/path-segment.js';

const decoder = new TextDecoder('utf-8', { fatal: true });

export function parseRecallRequest(data: Uint8Array, headers: MsgHdrs | undefined): RecallRequest {
  const accountId = headerValue(headers, ACCOUNT_ID_HEADER);
  const accountType = headerValue(headers, ACCOUNT_TYPE_HEADER);
  const missing = [
    ...(accountId === undefined ? [ACCOUNT_ID_HEADER] : []),
    ...(accountType === undefined ? [ACCOUNT_TYPE_HEADER] : []),
  ];
  if (accountId === undefined || accountType === undefined) {
    return refuse(`the ${missing.join(' and ')} header${missing.length > 1 ? 's are' : ' is'} required`, {
      missing_headers: missing,
    });
  }

  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    return refuse('the request body is not valid UTF-8 JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return refuse('the request body must be a JSON object');
  }
  const fields = body as Record<string, unknown>;
  for (const [field, header, value] of [
    ['account_id', ACCOUNT_ID_HEADER, accountId],
    ['account_type', ACCOUNT_TYPE_HEADER, accountType],
  ] as const) {
    if (fields[field] !== undefined && fields[field] !== value) {
      return refuse(`${field} in the body names another account than the ${header} header`, { field });
    }
  }

  const parsed = RecallRequest.safeParse({ ...fields, account_id: accountId, account_type: accountType });
  if (!parsed.success) throw InvalidRecallRequestError.fromZod(parsed.error);
  // kn_id and at_id become segments of ontology-query's path, where "." or ".." would climb out of it.
  const dotted = (['kn_id', 'at_id'] as const).filter((field) => isDotSegmentId(parsed.data[field]));
  if (dotted.length > 0) {
    const message = 'must not be "." or ".." (it would change the upstream request path)';
    return refuse(dotted.map((field) => `${field}: ${message}`).join('; '), {
      issues: dotted.map((field) => ({ path: field, message })),
    });
  }
  return parsed.data;
}

function headerValue(headers: MsgHdrs | undefined, name: string): string | undefined {
  const value = headers?.get(name, Match.IgnoreCase).trim();
  return value === undefined || value === '' ? undefined : value;
}

function refuse(message: string, detail?: unknown): never {
  throw new InvalidRecallRequestError(message, detail);
}
