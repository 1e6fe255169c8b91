// Test helper: small OpenAPI documents built inline, so each test shows exactly the case it exercises.

export function openApi(
  paths: Record<string, unknown>,
  components: Record<string, unknown> = {},
  version = '3.0.3',
) {
  return { openapi: version, info: { title: 'Test API', version: '1' }, paths, components };
}

/** A document with one operation at `method path`. */
export function oneOperation(
  method: string,
  path: string,
  operation: Record<string, unknown>,
  schemas: Record<string, unknown> = {},
) {
  return openApi(
    { [path]: { [method]: { operationId: 'op', responses: { 200: { description: 'ok' } }, ...operation } } },
    { schemas },
  );
}

export function jsonBody(schema: unknown, required = true) {
  return { required, content: { 'application/json': { schema } } };
}
