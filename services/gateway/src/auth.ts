/**
 * Who is calling. Three kinds of caller, the same for HTTP and the NATS ingress:
 * - `api_key`: `Authorization: Bearer <key>` or `x-api-key: <key>`, a key configured in API_KEYS or
 *   stored (as a digest) in KV `mesh_api_keys`; it acts for the key's account and nothing else.
 * - `admin`: a key from ADMIN_API_KEYS; may use the management plane and pre-assembled submissions,
 *   and on task endpoints acts for the account named in `x-account-id`.
 * - `trusted`: no key, but the ingress trusts account headers (HTTP: TRUST_ACCOUNT_HEADERS; NATS:
 *   always, because NATS permissions decide who may publish to the submit subject). It acts for
 *   `x-account-id`/`x-account-type` and has the admin's privileges.
 * Keys are compared as sha256 digests, so a lookup's timing says nothing about a key.
 */
import { createHash } from 'node:crypto';
import { AccountId, AccountType } from '@agentmesh/protocol';
import type { ApiKeyStore } from '@agentmesh/bus';
import type { ConfiguredApiKey } from './config.js';
import { Forbidden, InvalidRequest, Rejection, ServiceUnavailable, Unauthorized } from './errors.js';

export const CallerKind = { API_KEY: 'api_key', ADMIN: 'admin', TRUSTED: 'trusted' } as const;
export type CallerKind = (typeof CallerKind)[keyof typeof CallerKind];

export interface Caller {
  kind: CallerKind;
  /** The account acted for; absent when an admin or trusted caller names none. */
  accountId?: string;
  accountType?: string;
  /** The sha256 (hex) of the key an API key caller presented: what per-key limits count by. */
  keyDigest?: string;
}

export interface AccountCaller extends Caller {
  accountId: string;
}

/** Reads one request header (names are lower case). */
export type HeaderLookup = (name: string) => string | undefined;

export interface AuthenticatorOptions {
  configuredKeys?: ReadonlyMap<string, ConfiguredApiKey>;
  adminKeys?: ReadonlySet<string>;
  apiKeyStore: ApiKeyStore;
}

const digest = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');

export class Authenticator {
  private readonly configured = new Map<string, ConfiguredApiKey>();
  private readonly admins = new Set<string>();
  private readonly store: ApiKeyStore;

  constructor(options: AuthenticatorOptions) {
    for (const [key, grant] of options.configuredKeys ?? []) this.configured.set(digest(key), grant);
    for (const key of options.adminKeys ?? []) this.admins.add(digest(key));
    this.store = options.apiKeyStore;
  }

  /** The accounts the API keys configured at start-up act for. */
  configuredAccounts(): Set<string> {
    return new Set([...this.configured.values()].map((grant) => grant.account_id));
  }

  async authenticate(
    header: HeaderLookup,
    { trustAccountHeaders }: { trustAccountHeaders: boolean },
  ): Promise<Caller | Rejection> {
    const presented = presentedKey(header);
    if (presented instanceof Rejection) return presented;
    const claimed = claimedAccount(header);
    if (claimed instanceof Rejection) return claimed;

    if (presented === undefined) {
      if (!trustAccountHeaders) {
        return new Unauthorized('missing API key: send `Authorization: Bearer <key>` or `x-api-key: <key>`');
      }
      return { kind: CallerKind.TRUSTED, ...claimed };
    }
    const hashed = digest(presented);
    if (this.admins.has(hashed)) return { kind: CallerKind.ADMIN, ...claimed };

    let grant: ConfiguredApiKey | undefined = this.configured.get(hashed);
    if (!grant) {
      try {
        grant = await this.store.lookup(presented);
      } catch (error) {
        return new ServiceUnavailable('API keys cannot be checked right now', { cause: error });
      }
    }
    if (!grant) return new Unauthorized('unknown API key');
    if (claimed.accountId !== undefined && claimed.accountId !== grant.account_id) {
      return new Forbidden('x-account-id names another account than the API key');
    }
    return {
      kind: CallerKind.API_KEY,
      keyDigest: hashed,
      accountId: grant.account_id,
      ...(grant.account_type ? { accountType: grant.account_type } : {}),
    };
  }
}

/** The account a task request acts for, or why there is none. */
export function requireAccount(caller: Caller): AccountCaller | Rejection {
  if (caller.accountId !== undefined) return { ...caller, accountId: caller.accountId };
  return new Unauthorized(
    caller.kind === CallerKind.ADMIN
      ? 'an admin key acts for the account named in x-account-id; none was given'
      : 'a trusted caller names its account in x-account-id; none was given',
  );
}

/** Management plane and pre-assembled submissions: admin keys and trusted internal callers only. */
export function requirePrivileged(caller: Caller, what: string): Caller | Rejection {
  return caller.kind === CallerKind.API_KEY
    ? new Forbidden(`${what} needs an admin key or a trusted internal caller`)
    : caller;
}

function presentedKey(header: HeaderLookup): string | undefined | Rejection {
  const authorization = header('authorization');
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match?.[1]) return new Unauthorized('Authorization must be `Bearer <api key>`');
    return match[1];
  }
  const apiKey = header('x-api-key')?.trim();
  return apiKey ? apiKey : undefined;
}

function claimedAccount(header: HeaderLookup): { accountId?: string; accountType?: string } | Rejection {
  const accountId = header('x-account-id');
  const accountType = header('x-account-type');
  if (accountId !== undefined && !AccountId.safeParse(accountId).success) {
    return new InvalidRequest('x-account-id must be 1-128 characters of A-Z, a-z, 0-9, "_" or "-"');
  }
  if (accountType !== undefined && !AccountType.safeParse(accountType).success) {
    return new InvalidRequest('x-account-type must be 1-64 characters');
  }
  return {
    ...(accountId !== undefined ? { accountId } : {}),
    ...(accountType !== undefined ? { accountType } : {}),
  };
}
