/**
 * A large synthetic OpenAPI 3.0 document for the converter bench: `operations` operations (in groups of
 * five on one resource: list, create, get, update, delete) over a component set shaped like real APIs —
 * a shared Address used twice in a body, an `allOf` base, a `oneOf` payment, a recursive Category tree,
 * paging query parameters and nullable fields. Deterministic: the same count gives the same document.
 */

type Json = Record<string, unknown>;

const RESOURCES_PER_MODULE = 50;

export function syntheticOpenApi(operations: number): Json {
  const paths: Json = {};
  const schemas: Json = {
    Address: {
      type: 'object',
      description: 'A postal address.',
      required: ['line1', 'country'],
      properties: {
        line1: { type: 'string', description: 'Street and number.' },
        line2: { type: 'string', nullable: true },
        city: { type: 'string' },
        postal_code: { type: 'string', pattern: '^[0-9A-Z -]{3,10}$' },
        country: { type: 'string', minLength: 2, maxLength: 2, description: 'ISO 3166-1 alpha-2 code.' },
      },
    },
    Category: {
      type: 'object',
      description: 'A category, which may hold sub-categories.',
      properties: {
        name: { type: 'string' },
        children: { type: 'array', items: { $ref: '#/components/schemas/Category' } },
      },
    },
    Money: {
      type: 'object',
      required: ['amount', 'currency'],
      properties: {
        amount: { type: 'integer', minimum: 0, description: 'In the smallest unit of the currency.' },
        currency: { type: 'string', enum: ['eur', 'usd', 'gbp', 'jpy', 'chf'] },
      },
    },
    Card: {
      type: 'object',
      properties: {
        kind: { type: 'string', enum: ['card'] },
        number: { type: 'string' },
        cvc: { type: 'string' },
      },
    },
    Transfer: {
      type: 'object',
      properties: { kind: { type: 'string', enum: ['transfer'] }, iban: { type: 'string' } },
    },
    Payment: {
      oneOf: [{ $ref: '#/components/schemas/Card' }, { $ref: '#/components/schemas/Transfer' }],
      discriminator: { propertyName: 'kind' },
    },
    Base: {
      type: 'object',
      properties: {
        id: { type: 'string', readOnly: true },
        created: { type: 'string', format: 'date-time', readOnly: true },
        metadata: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
  };
  const resources = Math.ceil(operations / 5);
  let emitted = 0;
  for (let r = 0; r < resources && emitted < operations; r++) {
    const name = `Resource${r}`;
    const module = `m${Math.floor(r / RESOURCES_PER_MODULE)}`;
    schemas[name] = {
      allOf: [
        { $ref: '#/components/schemas/Base' },
        {
          type: 'object',
          required: ['title'],
          properties: {
            title: { type: 'string', description: `The ${name}'s title.`, maxLength: 200 },
            status: { type: 'string', enum: ['draft', 'active', 'archived'], default: 'draft' },
            price: { $ref: '#/components/schemas/Money' },
            billing_address: { $ref: '#/components/schemas/Address' },
            shipping_address: { $ref: '#/components/schemas/Address' },
            payment: { $ref: '#/components/schemas/Payment' },
            category: { $ref: '#/components/schemas/Category' },
            tags: { type: 'array', items: { type: 'string' }, maxItems: 20 },
            quantity: { type: 'integer', minimum: 1, example: 3 },
            note: { type: 'string', nullable: true },
          },
        },
      ],
    };
    const ref = { $ref: `#/components/schemas/${name}` };
    const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
    const json = (schema: Json): Json => ({ required: true, content: { 'application/json': { schema } } });
    const ok = { '200': { description: 'OK', content: { 'application/json': { schema: ref } } } };
    const collection: Json = {};
    const item: Json = {};
    const add = (target: Json, method: string, operation: Json): void => {
      if (emitted >= operations) return;
      target[method] = { ...operation, responses: ok };
      emitted += 1;
    };
    add(collection, 'get', {
      operationId: `list${name}`,
      summary: `List ${name} objects`,
      parameters: [
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        { name: 'cursor', in: 'query', schema: { type: 'string' } },
        { name: 'status', in: 'query', schema: { type: 'array', items: { type: 'string' } }, explode: false },
        { name: 'X-Request-Id', in: 'header', schema: { type: 'string', format: 'uuid' } },
      ],
    });
    add(collection, 'post', {
      operationId: `create${name}`,
      summary: `Create a ${name}`,
      requestBody: json(ref),
    });
    add(item, 'get', { operationId: `get${name}`, summary: `Get a ${name}`, parameters: [idParam] });
    add(item, 'patch', {
      operationId: `update${name}`,
      summary: `Update a ${name}`,
      parameters: [idParam],
      requestBody: json(ref),
    });
    add(item, 'delete', { operationId: `delete${name}`, summary: `Delete a ${name}`, parameters: [idParam] });
    paths[`/${module}/resource${r}`] = collection;
    paths[`/${module}/resource${r}/{id}`] = item;
  }
  return {
    openapi: '3.0.3',
    info: { title: `Synthetic API (${operations} operations)`, version: '1.0.0' },
    servers: [{ url: 'https://api.example.test/v1' }],
    paths,
    components: { schemas },
  };
}
