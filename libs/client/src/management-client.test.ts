import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sendJson, startStandInGateway, type StandInGateway } from './__fixtures__/stand-in-gateway.js';
import { MeshApiError, MeshProtocolError } from './errors.js';
import { ManagementClient } from './management-client.js';

let gateway: StandInGateway;
let management: ManagementClient;

beforeEach(async () => {
  gateway = await startStandInGateway();
  management = new ManagementClient({ baseUrl: gateway.url, apiKey: 'admin' });
});
afterEach(async () => {
  await gateway.stop();
});

describe('ManagementClient', () => {
  it('putTool refuses a definition of no known format before sending anything', async () => {
    const error = await management.putTool({ what: 'is this' }).catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshProtocolError);
    expect(gateway.requests).toHaveLength(0);
  });

  it('a list answer that breaks the contract (an agent without its scope) is a MeshProtocolError naming the field', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 200, {
        agents: [{ workflow_id: 'a', model: { model_name: 'm', base_url: 'http://127.0.0.1:1' } }],
      }),
    );

    const error = await management.listAgents().catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshProtocolError);
    expect((error as Error).message).toContain('scope');
  });

  it('account-wide credentials are put, listed and deleted under /accounts/:a/credentials, the value only in the body', async () => {
    gateway.handle((request, response) =>
      request.method === 'GET'
        ? sendJson(response, 200, { names: ['MODEL_KEY'] })
        : void response.writeHead(204).end(),
    );

    await management.putAccountCredential('acme', 'MODEL_KEY', 'account-canary-value');
    expect(await management.accountCredentialNames('acme')).toEqual(['MODEL_KEY']);
    await management.deleteAccountCredential('ac me', 'A/B');

    expect(gateway.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'PUT /v1/admin/accounts/acme/credentials/MODEL_KEY',
      'GET /v1/admin/accounts/acme/credentials',
      'DELETE /v1/admin/accounts/ac%20me/credentials/A%2FB',
    ]);
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ value: 'account-canary-value' });
  });

  it('listAccounts reads GET /v1/admin/accounts and validates the answer', async () => {
    gateway.handle((_request, response) => sendJson(response, 200, { accounts: ['acme', 'globex'] }));

    expect(await management.listAccounts()).toEqual(['acme', 'globex']);
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: '/v1/admin/accounts' });
  });

  it('deleting an account-wide credential that is not there is a MeshApiError NOT_FOUND', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 404, { code: 'NOT_FOUND', message: 'no account-wide credential K in account acme' }),
    );

    const error = await management.deleteAccountCredential('acme', 'K').catch((caught: unknown) => caught);

    expect(error).toBeInstanceOf(MeshApiError);
    expect(error).toMatchObject({ code: 'NOT_FOUND', status: 404 });
  });

  it('names in paths are percent-encoded, so a name cannot reach another route', async () => {
    gateway.handle((_request, response) => void response.writeHead(204).end());

    await management.deleteCredential('acme', 'u/1', 'A B');

    expect(gateway.requests[0]).toMatchObject({
      method: 'DELETE',
      path: '/v1/admin/accounts/acme/users/u%2F1/credentials/A%20B',
    });
  });
});
