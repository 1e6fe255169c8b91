// What an HTTP tool takes from the task rather than from the model: `context_params` maps a value of the
// task (who asked, in which account, under which trace, a seed 001 workflow variable) into a header or a
// query parameter, in the `{source, target, location}` shape of `auth_config.mapping`. The executor fills
// these in on every call; they are not in the tool's `parameters`, so the model neither sees nor sets them,
// and a model argument of the same name in the same place is replaced; importing a tool whose own
// `parameters` also name a target is refused, since the model would be offered a value it cannot set. A
// source the task does not carry (a variable it was not given, or one that is null) leaves the parameter out.
import { z } from 'zod';
import { AuthLocation } from './http-auth.js';
import type { JsonSchemaObject } from './json-schema.js';

/** The task's own values a tool may receive; a workflow variable is `variables.<name>`. */
export const TaskContextField = {
  USER_ID: 'user_id',
  ACCOUNT_ID: 'account_id',
  ACCOUNT_TYPE: 'account_type',
  TRACE_ID: 'trace_id',
} as const;
export type TaskContextField = (typeof TaskContextField)[keyof typeof TaskContextField];

export const VARIABLES_PREFIX = 'variables.';

export const ContextParamSource = z.union([
  z.enum(TaskContextField),
  z
    .string()
    .startsWith(VARIABLES_PREFIX)
    .min(VARIABLES_PREFIX.length + 1, 'name the variable: variables.<name>'),
]);
export type ContextParamSource = z.infer<typeof ContextParamSource>;

/** An HTTP token (RFC 9110 §5.6.2): what a header name, and here a query parameter name too, must be. */
const HTTP_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const ContextParam = z.object({
  /** `user_id`, `account_id`, `account_type`, `trace_id` or `variables.<name>`. */
  source: ContextParamSource,
  /** Header or query parameter name, e.g. `X-User-Id`. */
  target: z.string().regex(HTTP_TOKEN, 'must be an HTTP token (letters, digits, -, _, ...)'),
  location: AuthLocation,
});
export type ContextParam = z.infer<typeof ContextParam>;

export const ContextParams = z.array(ContextParam);
export type ContextParams = z.infer<typeof ContextParams>;

/** What the model may place under a name: its parameters, and for OpenAPI tools their bound wire names. */
export interface ModelArguments {
  readonly parameters: JsonSchemaObject;
  readonly bindings?: readonly { readonly in: string; readonly name?: string | undefined }[] | undefined;
}

/**
 * The indexes of the context parameters whose target the model's own parameters also name (headers
 * compared without case): the model would be offered a value the task sets.
 */
export function shadowedContextParams(params: ContextParams | undefined, model: ModelArguments): number[] {
  const properties = Object.keys(model.parameters.properties ?? {});
  const shadowed: number[] = [];
  (params ?? []).forEach((param, index) => {
    const fold = (name: string) => (param.location === 'header' ? name.toLowerCase() : name);
    const target = fold(param.target);
    const byProperty = properties.some((name) => fold(name) === target);
    const byBinding = (model.bindings ?? []).some(
      (binding) =>
        binding.in === param.location && binding.name !== undefined && fold(binding.name) === target,
    );
    if (byProperty || byBinding) shadowed.push(index);
  });
  return shadowed;
}
