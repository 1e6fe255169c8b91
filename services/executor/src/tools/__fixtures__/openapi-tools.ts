// Builders for HTTP tools imported from OpenAPI and for seed 004 dynamic tools, as the tests run them. Plain
// data built with the real converter; no test-kit imports (this file is compiled with the package).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { convertOperation, readDocumentFile, type OperationSelector } from '@agentmesh/openapi';
import { DynamicTool, fromDynamicTool, HttpTool, type DynamicToolDefinition } from '@agentmesh/protocol';

/** The shared corpus of real OpenAPI documents, beside the repository. */
const CORPUS = fileURLToPath(new URL('../../../../../../shared/openapi-corpus/', import.meta.url));

/** The corpus's pet store document (OpenAPI 3.0), parsed. */
export function petstoreDocument(): Promise<unknown> {
  return readDocumentFile(`${CORPUS}petstore3-swagger-api.yaml`);
}

/** One operation of `document` as the canonical HTTP tool an import stores, served from `serverUrl`. */
export function importedTool(document: unknown, selector: OperationSelector, serverUrl: string): HttpTool {
  const conversion = convertOperation(document, selector);
  return HttpTool.parse({
    type: 'HTTP',
    name: conversion.name,
    description: conversion.description,
    parameters: conversion.parameters,
    origin: { format: 'openapi', id: conversion.operationId ?? conversion.name },
    execution: {
      method: conversion.method,
      url: serverUrl,
      request_template: {
        method: conversion.method,
        path: conversion.path,
        arguments: conversion.arguments,
        body: conversion.body,
        nullAsAbsent: conversion.nullAsAbsent,
      },
    },
  });
}

/** Seed 004 appendix's dynamic tool (§11), canonical, its `api_url` given. */
export function seed004DynamicTool(apiUrl: string, change: Partial<DynamicTool> = {}): DynamicToolDefinition {
  const file = new URL(
    '../../../../../libs/protocol/src/__fixtures__/seeds/004-s11.1-response.json',
    import.meta.url,
  );
  const response = JSON.parse(readFileSync(file, 'utf8')) as { _dynamic_tools: unknown[] };
  const tool = DynamicTool.parse({ ...(response._dynamic_tools[0] as object), api_url: apiUrl, ...change });
  return fromDynamicTool(tool);
}
