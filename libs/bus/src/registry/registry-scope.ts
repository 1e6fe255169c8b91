/**
 * Where a registry definition (an agent in `mesh_agents`, a tool in `mesh_tools`) lives: in one
 * account's own namespace, or in the shared catalogue that only admins (and the operator's tool files
 * and the executors' native tools) write. An account's runs see its own definitions first and the shared
 * catalogue behind them, so nothing another account can change is ever used by its runs.
 *
 * Key layout: `shared.<name>` for the catalogue, `acct.<account>.<name>` for an account. The first token
 * tells them apart, and the account is one legal token (see AccountId), so no key of one scope can be
 * read as a key of another.
 */
import { isAccountId } from '@agentmesh/protocol';
import { InvalidRegistryNameError } from '../errors.js';

export type RegistryScope =
  { readonly kind: 'shared' } | { readonly kind: 'account'; readonly accountId: string };

/** The catalogue every account sees and only admins write. */
export const SHARED_CATALOGUE: RegistryScope = Object.freeze({ kind: 'shared' });

export function accountScope(accountId: string): RegistryScope {
  if (!isAccountId(accountId)) throw new InvalidRegistryNameError('account id', accountId);
  return Object.freeze({ kind: 'account', accountId });
}

/**
 * What a lookup from `scope` searches, in order: an account's own namespace, then the shared catalogue;
 * the shared catalogue sees only itself.
 */
export function lookupOrder(scope: RegistryScope): readonly RegistryScope[] {
  return scope.kind === 'shared' ? [SHARED_CATALOGUE] : [scope, SHARED_CATALOGUE];
}

/** `shared` or `account`, as the management API reports where a definition came from. */
export function scopeLabel(scope: RegistryScope): 'shared' | 'account' {
  return scope.kind;
}

const SHARED_TOKEN = 'shared';
const ACCOUNT_TOKEN = 'acct';
/** Every account's own definitions are keyed under this prefix. */
export const ACCOUNT_KEYS_PREFIX = `${ACCOUNT_TOKEN}.`;
/** Definition names are dot-separated tokens of these characters (workflow ids; function names). */
const NAME_PATTERN = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;

export function scopePrefix(scope: RegistryScope): string {
  return scope.kind === 'shared' ? `${SHARED_TOKEN}.` : `${ACCOUNT_TOKEN}.${scope.accountId}.`;
}

/** The KV key of `name` in `scope`; a name that is not a legal key throws (callers validate first). */
export function scopedKey(scope: RegistryScope, name: string): string {
  if (name.length > 128 || !NAME_PATTERN.test(name)) throw new InvalidRegistryNameError('name', name);
  return `${scopePrefix(scope)}${name}`;
}

/** The scope and name of a registry key; undefined for a key of neither layout (e.g. a legacy one). */
export function parseScopedKey(key: string): { scope: RegistryScope; name: string } | undefined {
  const [first, second, ...rest] = key.split('.');
  if (first === SHARED_TOKEN && second !== undefined) {
    const name = [second, ...rest].join('.');
    return NAME_PATTERN.test(name) ? { scope: SHARED_CATALOGUE, name } : undefined;
  }
  if (first === ACCOUNT_TOKEN && second !== undefined && isAccountId(second) && rest.length > 0) {
    const name = rest.join('.');
    return NAME_PATTERN.test(name) ? { scope: accountScope(second), name } : undefined;
  }
  return undefined;
}
