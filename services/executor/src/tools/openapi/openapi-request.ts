// Requests of HTTP tools imported from an OpenAPI document: the tool's `execution.request_template` places
// every argument as the document says (path, query, header, cookie, body; styles; renamed collisions), and
// `execution.url` is the server base the template's path is appended to.
import type { NullAsAbsent, RequestTemplate } from '@agentmesh/openapi';
import type { HttpToolExecution, OpenApiRequestTemplate } from '@agentmesh/protocol';
import type { HttpRequestPlan } from '../http/request-plan.js';
import { joinUrl, planFromRequestParts, requestPartsFor } from '../http/request-parts-plan.js';

export function buildOpenApiRequest(
  execution: HttpToolExecution,
  template: OpenApiRequestTemplate,
  args: Readonly<Record<string, unknown>>,
): HttpRequestPlan {
  const parts = requestPartsFor(toRequestTemplate(template), args);
  const url = joinUrl(execution.url, parts.path, parts.queryString);
  return planFromRequestParts(parts.method ?? execution.method, url, parts);
}

/** The protocol's stored form of the template, typed as the lib reads it (the same plain data). */
export function toRequestTemplate(template: OpenApiRequestTemplate): RequestTemplate {
  return {
    method: template.method?.toUpperCase(),
    path: template.path,
    arguments: template.arguments,
    body: template.body,
    nullAsAbsent: template.nullAsAbsent as NullAsAbsent | undefined,
  };
}
