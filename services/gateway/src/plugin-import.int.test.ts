// `POST /v1/admin/plugins/import`: OpenAPI documents (the corpus' pet store, a tiny Swagger 2.0 one) become
// canonical HTTP plugins in KV mesh_tools, one per operation, whose request template the converter can
// turn back into a request; security schemes become auth with credential names to fill.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { openMeshBuckets, ToolStore, SHARED_CATALOGUE, type ScopedPluginStore } from '@agentmesh/bus';
import { buildRequestParts, type NullAsAbsent, type RequestTemplate } from '@agentmesh/openapi';
import { HttpTool } from '@agentmesh/protocol';
import { startNats, type NatsServer } from '@agentmesh/testkit';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  bearer,
  call,
  startTestGateway,
  type Json,
  type TestGateway,
} from './__fixtures__/gateway-harness.js';

const ADMIN_KEY = 'admin-key-import-0123456789abc';
const ACME_KEY = 'acme-key-import-0123456789abcd';
const admin = bearer(ADMIN_KEY);
const PETSTORE = readFileSync(
  fileURLToPath(new URL('../../../../shared/openapi-corpus/petstore3-swagger-api.yaml', import.meta.url)),
  'utf8',
);
const PETSTORE_URL = 'https://petstore3.swagger.io/api/v3';
/** Small enough that only the import route's own limit lets the pet store (about 25 KB) in. */
const BODY_LIMIT = 8 * 1024;
const IMPORT_LIMIT = 256 * 1024;

let nats: NatsServer;
let gw: TestGateway;
let client: NatsConnection;
let plugins: ScopedPluginStore;

beforeAll(async () => {
  nats = await startNats();
  gw = await startTestGateway(nats.url, {
    ADMIN_API_KEYS: ADMIN_KEY,
    API_KEYS: `${ACME_KEY}=acme`,
    BODY_LIMIT_BYTES: String(BODY_LIMIT),
    PLUGIN_IMPORT_BODY_LIMIT_BYTES: String(IMPORT_LIMIT),
  });
  client = await connect({ servers: nats.url });
  plugins = new ToolStore((await openMeshBuckets(jetstream(client))).tools).scoped(SHARED_CATALOGUE);
});
afterAll(async () => {
  await gw?.stop();
  await client?.close();
  await nats?.stop();
});

/** The stored template in the converter's own type (the protocol's marks every key but `arguments` optional). */
function templateOf(tool: HttpTool): RequestTemplate {
  const template = tool.execution.request_template;
  if (!template) throw new Error(`${tool.name} has no request template`);
  return {
    method: template.method,
    path: template.path,
    arguments: template.arguments,
    body: template.body,
    nullAsAbsent: template.nullAsAbsent as NullAsAbsent | undefined,
  };
}

const importDocument = (
  body: Record<string, unknown>,
  headers: Record<string, string> = admin,
  path = '/v1/admin/plugins/import',
) => call(gw.url, 'POST', path, { body, headers });

async function clearPlugins(): Promise<void> {
  for (const tool of await plugins.list()) await plugins.delete(tool.name);
}

describe('the pet store (OpenAPI 3.0, YAML text)', () => {
  it('every one of its 19 operations is stored as a canonical HTTP plugin with its request template and origin', async () => {
    await clearPlugins();
    expect(PETSTORE.length).toBeGreaterThan(BODY_LIMIT);
    const answer = await importDocument({ document: PETSTORE, credential_prefix: 'PETSTORE' });
    expect(answer.status).toBe(201);
    expect(answer.body.imported).toHaveLength(19);
    expect(answer.body.skipped).toEqual([]);
    expect(answer.body.imported).toContainEqual({
      name: 'getPetById',
      method: 'GET',
      path: '/pet/{petId}',
      operation: 'getPetById',
      existed: false,
    });

    const stored = await plugins.list();
    expect(stored.map((tool) => tool.name).sort()).toEqual(
      answer.body.imported.map((entry: Json) => entry.name).sort(),
    );
    for (const tool of stored) {
      const http = HttpTool.parse(tool);
      expect(http.execution.url).toBe(PETSTORE_URL);
      expect(http.execution.request_template?.path).toMatch(/^\//);
      expect(http.origin?.format).toBe('openapi');
    }
    const listed = await call(gw.url, 'GET', '/v1/admin/plugins', { headers: admin });
    expect(listed.body.plugins).toHaveLength(19);
  });

  it("a stored plugin's request template places each argument where the document says", async () => {
    const getPetById = HttpTool.parse(await plugins.get('getPetById'));
    expect(getPetById.execution.method).toBe('GET');
    expect(getPetById.parameters).toMatchObject({
      properties: { petId: { type: 'integer' } },
      required: ['petId'],
    });
    expect(buildRequestParts(templateOf(getPetById), { petId: 7 })).toMatchObject({
      method: 'GET',
      path: '/pet/7',
    });

    const findByStatus = HttpTool.parse(await plugins.get('findPetsByStatus'));
    const byStatus = buildRequestParts(templateOf(findByStatus), { status: 'sold' });
    expect(byStatus).toMatchObject({ path: '/pet/findByStatus', query: [['status', 'sold']] });

    const addPet = HttpTool.parse(await plugins.get('addPet'));
    const added = buildRequestParts(templateOf(addPet), { name: 'Rex', photoUrls: [] });
    expect(added.body).toMatchObject({ kind: 'json', value: { name: 'Rex', photoUrls: [] } });
    expect(added.contentType).toBe('application/json');
  });

  it('the api_key scheme becomes an api_key auth mapping with a credential name to fill; implicit OAuth2 is reported, not guessed', async () => {
    const getPetById = HttpTool.parse(await plugins.get('getPetById'));
    expect(getPetById.auth).toEqual({
      type: 'api_key',
      mapping: [{ source: 'PETSTORE_API_KEY', target: 'api_key', location: 'header' }],
    });
    expect(getPetById.required_credentials).toEqual(['PETSTORE_API_KEY']);
    const inventory = HttpTool.parse(await plugins.get('getInventory'));
    expect(inventory.auth?.type).toBe('api_key');

    // addPet only accepts petstore_auth (an implicit OAuth2 flow, which needs a user at a browser).
    const addPet = HttpTool.parse(await plugins.get('addPet'));
    expect(addPet.auth).toBeUndefined();
    const answer = await importDocument({ document: PETSTORE, credential_prefix: 'PETSTORE', dry_run: true });
    expect(answer.body.credentials).toEqual(['PETSTORE_API_KEY']);
    const addPetWarning = answer.body.warnings.find((w: Json) => w.operation === 'addPet');
    expect(addPetWarning.message).toContain('clientCredentials');
  });

  it('an operations filter (operationId or METHOD /path) imports only those; a name that matches nothing is skipped with the reason (at /tools/import)', async () => {
    await clearPlugins();
    const answer = await importDocument(
      {
        document: PETSTORE,
        operations: ['getPetById', 'DELETE /store/order/{orderId}', 'noSuchOperation'],
        name_prefix: 'petstore_',
      },
      admin,
      '/v1/admin/tools/import',
    );
    expect(answer.status).toBe(201);
    expect(answer.body.imported.map((entry: Json) => [entry.name, entry.method, entry.path])).toEqual([
      ['petstore_getPetById', 'GET', '/pet/{petId}'],
      ['petstore_deleteOrder', 'DELETE', '/store/order/{orderId}'],
    ]);
    expect(answer.body.skipped).toEqual([
      { operation: 'noSuchOperation', reason: expect.stringContaining('no operation') },
    ]);
    // The credential names follow the name prefix when no credential_prefix is given.
    expect(answer.body.credentials).toEqual(['PETSTORE_API_KEY']);
    expect((await plugins.list()).map((tool) => tool.name).sort()).toEqual([
      'petstore_deleteOrder',
      'petstore_getPetById',
    ]);
  });

  it('importing again replaces the plugins of the same name and says so; a dry run stores nothing and shows the plugins', async () => {
    await clearPlugins();
    const first = await importDocument({ document: PETSTORE, operations: ['getPetById'] });
    expect(first.body.imported[0].existed).toBe(false);
    const again = await importDocument({
      document: PETSTORE,
      operations: ['getPetById'],
      base_url: 'http://127.0.0.1:9/petstore/',
    });
    expect(again.status).toBe(201);
    expect(again.body.imported[0].existed).toBe(true);
    expect(HttpTool.parse(await plugins.get('getPetById')).execution.url).toBe('http://127.0.0.1:9/petstore');

    const dry = await importDocument({
      document: PETSTORE,
      operations: ['addPet', 'getPetById'],
      dry_run: true,
    });
    expect(dry.status).toBe(200);
    expect(dry.body.dry_run).toBe(true);
    expect(dry.body.imported.map((entry: Json) => [entry.name, entry.existed])).toEqual([
      ['addPet', false],
      ['getPetById', true],
    ]);
    expect(dry.body.plugins.map((tool: Json) => HttpTool.parse(tool).name)).toEqual(['addPet', 'getPetById']);
    expect(await plugins.get('addPet')).toBeUndefined();
    expect(HttpTool.parse(await plugins.get('getPetById')).execution.url).toBe('http://127.0.0.1:9/petstore');
  });
});

describe('Swagger 2.0', () => {
  const tiny = {
    swagger: '2.0',
    info: { title: 'Tiny', version: '1' },
    host: 'api.tiny.test',
    basePath: '/v2',
    schemes: ['https'],
    securityDefinitions: { token: { type: 'apiKey', in: 'query', name: 'token' } },
    security: [{ token: [] }],
    paths: {
      '/items/{id}': {
        get: {
          operationId: 'getItem',
          parameters: [
            { name: 'id', in: 'path', required: true, type: 'string' },
            { name: 'verbose', in: 'query', type: 'boolean' },
          ],
          responses: { 200: { description: 'ok' } },
        },
      },
      '/items': {
        post: {
          operationId: 'createItem',
          consumes: ['application/json'],
          parameters: [
            {
              name: 'item',
              in: 'body',
              required: true,
              schema: { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] },
            },
          ],
          responses: { 201: { description: 'created' } },
        },
      },
    },
  };

  it('a JSON object document is upgraded and imported: host + basePath is the URL, body and query arguments placed, the query key is auth', async () => {
    await clearPlugins();
    const answer = await importDocument({ document: tiny, credential_prefix: 'TINY' });
    expect(answer.status).toBe(201);
    expect(answer.body.imported.map((entry: Json) => entry.name)).toEqual(['getItem', 'createItem']);
    expect(answer.body.credentials).toEqual(['TINY_TOKEN']);

    const getItem = HttpTool.parse(await plugins.get('getItem'));
    expect(getItem.execution.url).toBe('https://api.tiny.test/v2');
    expect(getItem.auth).toEqual({
      type: 'api_key',
      mapping: [{ source: 'TINY_TOKEN', target: 'token', location: 'query' }],
    });
    expect(buildRequestParts(templateOf(getItem), { id: 'a b', verbose: true })).toMatchObject({
      path: '/items/a%20b',
      query: [['verbose', 'true']],
    });
    const createItem = HttpTool.parse(await plugins.get('createItem'));
    expect(createItem.parameters.required).toContain('label');
    expect(buildRequestParts(templateOf(createItem), { label: 'x' }).body).toMatchObject({
      kind: 'json',
      value: { label: 'x' },
    });
  });

  it('without a host the server is relative: 400 telling the caller to pass base_url, and with it the import works', async () => {
    const { host: _host, schemes: _schemes, ...relative } = tiny;
    const refused = await importDocument({ document: relative });
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('INVALID_REQUEST');
    expect(refused.body.message).toContain('"/v2" is relative');
    expect(refused.body.message).toContain('base_url');

    const accepted = await importDocument({
      document: relative,
      base_url: 'http://127.0.0.1:9/v2',
      dry_run: true,
    });
    expect(accepted.status).toBe(200);
    expect(accepted.body.plugins[0].execution.url).toBe('http://127.0.0.1:9/v2');
  });
});

describe('refusals', () => {
  it.each([
    ['YAML that does not parse', { document: 'openapi: 3.0.0\npaths: [unclosed' }, 'neither JSON nor YAML'],
    ['text that is not a document', { document: 'just words' }, 'not an OpenAPI document'],
    ['an object that is not OpenAPI', { document: { hello: 'world' } }, 'not an OpenAPI document'],
    [
      'a document without operations',
      { document: { openapi: '3.0.3', info: {}, paths: {} } },
      'no operations',
    ],
    ['no document at all', { operations: ['x'] }, 'document'],
    ['an unknown option', { document: PETSTORE, dryrun: true }, 'dryrun'],
    ['a relative base_url', { document: PETSTORE, base_url: '/api' }, 'base_url'],
  ])('%s is 400 INVALID_REQUEST with a clear message, and nothing is stored', async (_label, body, says) => {
    await clearPlugins();
    const answer = await importDocument(body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('INVALID_REQUEST');
    expect(answer.body.message).toContain(says);
    expect(await plugins.list()).toEqual([]);
  });

  it('an API key caller is 403, like the rest of the management plane', async () => {
    const answer = await importDocument({ document: PETSTORE }, bearer(ACME_KEY));
    expect(answer.status).toBe(403);
    expect(answer.body.code).toBe('FORBIDDEN');
  });

  it("a body over the import's own limit is 413 naming that limit", async () => {
    const answer = await importDocument({ document: PETSTORE + `\n# ${'x'.repeat(IMPORT_LIMIT)}` });
    expect(answer.status).toBe(413);
    expect(answer.body).toMatchObject({ code: 'PAYLOAD_TOO_LARGE', detail: { limit_bytes: IMPORT_LIMIT } });
  });
});
