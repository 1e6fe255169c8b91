// An HTTP tool's `context_params`: values of the task (user_id, account, trace_id, `input.variables`) the
// executor puts into the request itself, in headers or the query. The model never sees them, and whatever
// the model's arguments put under the same header or query name is replaced, so a model cannot act as
// another user. A source the task lacks (a variable not given, or null) leaves the parameter out. These
// values identify people and are no secrets, but they are not logged: nothing here logs, and the error
// messages name the parameter, never its value. Like credentials, the headers are not forwarded when a
// redirect leaves the tool's origin.
import { TaskContextField, VARIABLES_PREFIX, type ContextParams, type JsonObject } from '@agentmesh/protocol';
import { scalarText } from './param-encoding.js';
import { headerName, type HttpRequestPlan } from './request-plan.js';
import { ContextValueError } from '../tool-errors.js';

const FORBIDDEN_IN_HEADER_VALUE = /[\r\n\0]/;

/** What a task tells its tools about itself. */
export interface TaskContextValues {
  readonly user_id: string;
  readonly account_id: string;
  readonly account_type?: string;
  readonly trace_id: string;
  /** Seed 001 `input.variables`. */
  readonly variables: JsonObject;
}

/** The plan with the tool's context parameters set; absent values leave their parameter out. */
export function withContextParams(
  plan: HttpRequestPlan,
  params: ContextParams | undefined,
  task: TaskContextValues | undefined,
): HttpRequestPlan {
  if (params === undefined || params.length === 0) return plan;
  const url = new URL(plan.url);
  const headers = { ...plan.headers };
  const credentialHeaders = new Set(plan.credentialHeaders);
  for (const param of params) {
    const name = param.location === 'header' ? headerName(param.target) : param.target;
    // The model's value goes whether or not the task has one: the parameter is the task's to set.
    if (param.location === 'header') delete headers[name];
    else url.searchParams.delete(name);
    const value = task === undefined ? undefined : sourceValue(task, param.source);
    if (value === undefined) continue;
    if (param.location === 'header') {
      if (FORBIDDEN_IN_HEADER_VALUE.test(value)) throw new ContextValueError(name, param.source);
      headers[name] = value;
      credentialHeaders.add(name);
    } else url.searchParams.append(name, value);
  }
  return { ...plan, url, headers, credentialHeaders };
}

function sourceValue(task: TaskContextValues, source: string): string | undefined {
  if (source.startsWith(VARIABLES_PREFIX)) {
    const value = task.variables[source.slice(VARIABLES_PREFIX.length)];
    return value === undefined || value === null ? undefined : scalarText(value);
  }
  switch (source) {
    case TaskContextField.USER_ID:
      return task.user_id;
    case TaskContextField.ACCOUNT_ID:
      return task.account_id;
    case TaskContextField.ACCOUNT_TYPE:
      return task.account_type;
    case TaskContextField.TRACE_ID:
      return task.trace_id;
    default:
      return undefined;
  }
}
