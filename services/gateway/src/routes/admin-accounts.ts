/**
 * `GET /accounts`: the accounts an admin may act for with `x-account-id`, as the mesh knows them — from
 * the configured API keys, the accounts' own agents and tools, and stored credentials (names of keys only;
 * nothing is read or decrypted). Keys registered through `POST /api-keys` are stored as digests the gateway
 * may not list, so an account known only from one is not named: the console lets a person type any id.
 * Only an admin key naming no account may list: a caller confined to an account learns of no other.
 */
import type { AgentStore, CredentialStore, ToolStore } from '@agentmesh/bus';
import { AccountId, type AccountList } from '@agentmesh/protocol';
import type { FastifyInstance } from 'fastify';
import { Forbidden, sendRejection } from '../errors.js';

export interface AccountRouteDeps {
  agents: AgentStore;
  plugins: ToolStore;
  credentials: CredentialStore;
  /** The accounts of the API keys configured at start-up (API_KEYS). */
  configuredAccounts: ReadonlySet<string>;
}

export function registerAccountRoutes(app: FastifyInstance, deps: AccountRouteDeps): void {
  app.get('/accounts', async (request, reply) => {
    if (request.managedAccount !== undefined) {
      return sendRejection(
        reply,
        new Forbidden('listing accounts needs an admin key naming no account (no x-account-id)'),
      );
    }
    const found = await Promise.all([
      deps.agents.accountIds(),
      deps.plugins.accountIds(),
      deps.credentials.accountIds(),
    ]);
    const accounts = new Set(deps.configuredAccounts);
    for (const set of found) for (const account of set) accounts.add(account);
    const body: AccountList = {
      accounts: [...accounts].filter((account) => AccountId.safeParse(account).success).sort(),
    };
    return body;
  });
}
