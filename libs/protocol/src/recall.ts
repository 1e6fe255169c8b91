// Seed 004, action recall: the request the recall service answers (HTTP body and NATS `mesh.recall.actions`),
// the two upstream calls it makes (ontology-query action query, operator tool box tool detail) and its answer,
// `_dynamic_tools`. Upstream responses are loose: they carry more than we read, and must not break us for it.
import { z } from 'zod';
import { ErrorBody } from './errors.js';
import { RecalledTool } from './tools/mcp-dynamic-tool.js';
import { JsonObject } from './tools/json-schema.js';

/** An object's primary key as name → value, e.g. `{ "disease_id": "disease_000001" }`. */
export const UniqueIdentity = z
  .record(z.string().min(1), z.union([z.string(), z.number(), z.boolean()]))
  .refine((identity) => Object.keys(identity).length > 0, 'a unique identity needs at least one key')
  .meta({ minProperties: 1 });
export type UniqueIdentity = z.infer<typeof UniqueIdentity>;

const identityFields = {
  /** Seed 004's v1 input: one object. */
  unique_identity: UniqueIdentity.optional(),
  /** Several objects, several tools (seed 004 phase 3). */
  unique_identities: z.array(UniqueIdentity).min(1).optional(),
};

function exactlyOneIdentityForm(
  body: { unique_identity?: unknown; unique_identities?: unknown },
  ctx: z.RefinementCtx,
): void {
  const forms = [body.unique_identity, body.unique_identities].filter((form) => form !== undefined).length;
  if (forms !== 1) {
    ctx.addIssue({
      code: 'custom',
      path: ['unique_identity'],
      message:
        forms === 0
          ? 'one of unique_identity or unique_identities is required'
          : 'give either unique_identity or unique_identities, not both',
    });
  }
}

const ONE_IDENTITY_FORM = { oneOf: [{ required: ['unique_identity'] }, { required: ['unique_identities'] }] };

/** Body of seed 004's HTTP endpoint (`kn_id`, `at_id` are path parameters there). */
export const ActionRecallRequest = z
  .object(identityFields)
  .superRefine(exactlyOneIdentityForm)
  .meta(ONE_IDENTITY_FORM);
export type ActionRecallRequest = z.infer<typeof ActionRecallRequest>;

/** `mesh.recall.actions` request: the path parameters and the account headers travel in the body. */
export const RecallRequest = z
  .object({
    /** Knowledge network id. */
    kn_id: z.string().min(1),
    /** Action type id. */
    at_id: z.string().min(1),
    ...identityFields,
    /** Seed 004's `x-account-id` header. */
    account_id: z.string().min(1),
    /** Seed 004's `x-account-type` header. */
    account_type: z.string().min(1),
  })
  .superRefine(exactlyOneIdentityForm)
  .meta(ONE_IDENTITY_FORM);
export type RecallRequest = z.infer<typeof RecallRequest>;

/** The identities of a request, whichever form it used. */
export function recallIdentities(request: ActionRecallRequest): UniqueIdentity[] {
  return (
    request.unique_identities ?? (request.unique_identity === undefined ? [] : [request.unique_identity])
  );
}

/**
 * One identity of a plural recall that could not be recalled: its position in `unique_identities`, the
 * identity itself and the error it would have been answered with alone.
 */
export const IdentityFailure = ErrorBody.extend({
  index: z.number().int().min(0),
  unique_identity: UniqueIdentity,
});
export type IdentityFailure = z.infer<typeof IdentityFailure>;

/**
 * `{ "_dynamic_tools": [...] }`; empty when the object has no actions. A plural recall in which some
 * identities failed also lists those under `failures`, beside the tools of the others.
 */
export const ActionRecallResponse = z.object({
  _dynamic_tools: z.array(RecalledTool),
  failures: z.array(IdentityFailure).optional(),
});
export type ActionRecallResponse = z.infer<typeof ActionRecallResponse>;
export type ActionRecallResponseInput = z.input<typeof ActionRecallResponse>;

/** Seed 004 §6 error body: the mesh's ErrorBody. */
export const RecallErrorBody = ErrorBody;

// ---- upstream: ontology-query action query ----

/** POST body of `/api/ontology-query/v1/knowledge-networks/{kn_id}/action-types/{at_id}`. */
export const ActionQueryRequest = z.object({ unique_identities: z.array(UniqueIdentity).min(1) });
export type ActionQueryRequest = z.infer<typeof ActionQueryRequest>;

export const ActionSourceType = {
  TOOL: 'tool',
  /** Seed 004 phase 3: the actions run as a tool of an MCP server (`mcp_server`, `tool_name`). */
  MCP: 'mcp',
} as const;

export const ActionSource = z.looseObject({
  /** A string rather than an enum: an unknown source type is UNSUPPORTED_ACTION_TYPE, not a broken upstream. */
  type: z.string().min(1),
  box_id: z.string().min(1).optional(),
  tool_id: z.string().min(1).optional(),
  /** `mcp` sources: the registry name of the MCP server and the tool on it. */
  mcp_server: z.string().min(1).optional(),
  tool_name: z.string().min(1).optional(),
});
export type ActionSource = z.infer<typeof ActionSource>;

export const Action = z.looseObject({
  /** Instantiated fixed parameters → `fixed_params`. */
  parameters: JsonObject.default({}),
  /** Left for the model to fill (null values); recall ignores them. */
  dynamic_params: JsonObject.optional(),
});
export type Action = z.infer<typeof Action>;

/**
 * The operations of ontology-query's conditions (`CondCfg`): `and`/`or` over `sub_conditions`, the others
 * compare a `field` with a `value` (`value_from`: `const`, or `field` for another field's value). Recall
 * evaluates the ones listed here; any other is a condition it cannot read.
 */
export const ConditionOperation = {
  AND: 'and',
  OR: 'or',
  EQ: '==',
  /** ontology-query's filters also spell equality `=`. */
  EQ_ALIAS: '=',
  NOT_EQ: '!=',
  GT: '>',
  GTE: '>=',
  LT: '<',
  LTE: '<=',
  IN: 'in',
  NOT_IN: 'not_in',
  LIKE: 'like',
  NOT_LIKE: 'not_like',
  CONTAIN: 'contain',
  NOT_CONTAIN: 'not_contain',
  PREFIX: 'prefix',
  NOT_PREFIX: 'not_prefix',
  /** `[low, high)`, as ontology-query's `range`. */
  RANGE: 'range',
  OUT_RANGE: 'out_range',
  EXIST: 'exist',
  NOT_EXIST: 'not_exist',
  EMPTY: 'empty',
  NOT_EMPTY: 'not_empty',
  NULL: 'null',
  NOT_NULL: 'not_null',
  TRUE: 'true',
  FALSE: 'false',
} as const;
export type ConditionOperation = (typeof ConditionOperation)[keyof typeof ConditionOperation];

/** Where a condition's right-hand value comes from. */
export const ConditionValueFrom = {
  CONST: 'const',
  FIELD: 'field',
} as const;
export type ConditionValueFrom = (typeof ConditionValueFrom)[keyof typeof ConditionValueFrom];

/**
 * The action type the actions belong to, as ontology-query describes it. `condition` is left unread here:
 * a condition recall cannot evaluate is its own clear error, not an answer that is "not an action list".
 */
export const ActionTypeInfo = z.looseObject({
  id: z.string().optional(),
  name: z.string().optional(),
  /** Offer the actions only where this holds (seed 004 phase 3); shape: ontology-query's `CondCfg`. */
  condition: z.unknown().optional(),
});
export type ActionTypeInfo = z.infer<typeof ActionTypeInfo>;

export const ActionQueryResponse = z.looseObject({
  action_type: ActionTypeInfo.optional(),
  actions: z.array(Action).default([]),
  action_source: ActionSource.optional(),
});
export type ActionQueryResponse = z.infer<typeof ActionQueryResponse>;

// ---- upstream: operator tool box tool detail ----

export const OpenApiParameterLocation = z.enum(['path', 'query', 'header', 'cookie']);

export const OpenApiParameter = z.looseObject({
  name: z.string().min(1),
  in: OpenApiParameterLocation,
  description: z.string().optional(),
  required: z.boolean().optional(),
  schema: JsonObject.optional(),
});
export type OpenApiParameter = z.infer<typeof OpenApiParameter>;

/** The tool's OpenAPI operation (`api_spec`), as kept in `original_schema`. */
export const ApiSpec = z.looseObject({
  parameters: z.array(OpenApiParameter).optional(),
  request_body: JsonObject.optional(),
  components: JsonObject.optional(),
});
export type ApiSpec = z.infer<typeof ApiSpec>;

/** Response of `/api/agent-operator-integration/internal-v1/tool-box/{box_id}/tool/{tool_id}`. */
export const ToolDetailResponse = z.looseObject({
  name: z.string().min(1),
  description: z.string().default(''),
  api_spec: ApiSpec,
});
export type ToolDetailResponse = z.infer<typeof ToolDetailResponse>;
