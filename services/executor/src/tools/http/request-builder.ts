// Builds an HTTP tool's request from the model's arguments. Two sources, one result: tools imported from
// OpenAPI carry a `request_template` that places each argument; seed 000 tools place them by
// `param_placement`/`argument_locations`. Either way the plan goes to the same guarded sender.
import type { HttpToolExecution } from '@agentmesh/protocol';
import { buildOpenApiRequest } from '../openapi/openapi-request.js';
import type { HttpRequestPlan } from './request-plan.js';
import { buildSeed000Request } from './seed000-request.js';

export function buildHttpRequest(
  execution: HttpToolExecution,
  args: Readonly<Record<string, unknown>>,
): HttpRequestPlan {
  if (execution.request_template !== undefined) {
    return buildOpenApiRequest(execution, execution.request_template, args);
  }
  return buildSeed000Request(execution, args);
}
