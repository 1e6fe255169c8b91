/**
 * The caller's account as seed 004 passes it upstream: the `x-account-id` / `x-account-type` headers.
 */

export const ACCOUNT_ID_HEADER = 'x-account-id';
export const ACCOUNT_TYPE_HEADER = 'x-account-type';

export interface Account {
  id: string;
  type: string;
}

export function accountHeaders(account: Account): Record<string, string> {
  return { [ACCOUNT_ID_HEADER]: account.id, [ACCOUNT_TYPE_HEADER]: account.type };
}
