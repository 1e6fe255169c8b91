/**
 * The console's credentials view (console/credentials-view.js, plain JavaScript served to the browser) run
 * in Node: which management paths it calls for each scope, and which keys may use it.
 */
import { describe, expect, it } from 'vitest';

const { credentialsPath, mayManageCredentials } = (await import(
  new URL('../console/credentials-view.js', import.meta.url).href
)) as {
  credentialsPath: (account: string, user?: string) => string;
  mayManageCredentials: (kind: string | undefined) => boolean;
};

describe('console credentials view', () => {
  it("when the scope is the account it calls the account-wide set; for a user, that user's set, with both ids escaped", () => {
    expect(credentialsPath('acme')).toBe('/v1/admin/accounts/acme/credentials');
    expect(credentialsPath('acme', 'console')).toBe('/v1/admin/accounts/acme/users/console/credentials');
    expect(credentialsPath('a/b', 'u ?#')).toBe('/v1/admin/accounts/a%2Fb/users/u%20%3F%23/credentials');
  });

  it("when the key is an admin key or a trusted caller it may manage credentials; an account's API key may not", () => {
    expect(mayManageCredentials('admin')).toBe(true);
    expect(mayManageCredentials('trusted')).toBe(true);
    expect(mayManageCredentials('api_key')).toBe(false);
    expect(mayManageCredentials(undefined)).toBe(false);
  });
});
