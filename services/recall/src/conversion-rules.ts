/**
 * The rules that turn a recalled action into a dynamic tool, configurable per deployment
 * (`CONVERSION_RULES` or `CONVERSION_RULES_FILE`, read at start-up): the tool's name and description
 * templates, its `api_url` template, where fixed parameters go and whether they leave the model's schema,
 * and the options of the OpenAPI → function schema conversion. Every rule defaults to what recall did
 * before rules existed, so an empty rule set `{}` changes nothing.
 */
import { BodyMode, ExampleMode, RefMode, UnionMode, type ConversionOptions } from '@agentmesh/openapi';
import { z } from 'zod';

export const DEFAULT_API_URL_TEMPLATE =
  'http://agent-operator-integration:9000/api/agent-operator-integration/internal-v1/tool-box/{box_id}/proxy/{tool_id}';

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** A template whose `{placeholders}` are all among `allowed` (and that holds every one of `required`). */
function template(allowed: readonly string[], required: readonly string[] = []) {
  return z
    .string()
    .min(1)
    .superRefine((value, ctx) => {
      const used = [...value.matchAll(PLACEHOLDER)].map((match) => match[1] ?? '');
      const unknown = used.filter((name) => !allowed.includes(name));
      if (unknown.length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: `unknown placeholder ${unknown.map((name) => `{${name}}`).join(', ')} (known: ${allowed.map((name) => `{${name}}`).join(', ')})`,
        });
      }
      const missing = required.filter((name) => !used.includes(name));
      if (missing.length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: `must contain ${missing.map((name) => `{${name}}`).join(' and ')}`,
        });
      }
    });
}

const NAME_PLACEHOLDERS = ['tool_name', 'box_id', 'tool_id', 'kn_id', 'at_id', 'action_type_name'] as const;

export const ApiUrlTemplate = template(['box_id', 'tool_id'], ['box_id', 'tool_id']).refine((value) => {
  try {
    const url = new URL(value.replaceAll('{box_id}', 'b').replaceAll('{tool_id}', 't'));
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}, 'must be an absolute http(s) URL once the placeholders are filled');

const FixedLocation = z.enum(['header', 'path', 'query', 'body']);

export const ConversionRules = z.strictObject({
  tool_name: template(NAME_PLACEHOLDERS)
    .default('{tool_name}')
    .describe('Name of the tool of a singular recall (unique_identity); not made a legal function name'),
  plural_tool_name: template([...NAME_PLACEHOLDERS, 'action_id'], ['action_id'])
    .default('{tool_name}_{action_id}')
    .describe(
      'Name of each tool of a plural recall: made a legal function name, {tool_name} shortened to fit 64 characters',
    ),
  description: template([...NAME_PLACEHOLDERS, 'tool_description'])
    .default('{tool_description}')
    .describe("The tool's description for the model"),
  api_url: ApiUrlTemplate.optional().describe(
    'The api_url of each tool; when absent, API_URL_TEMPLATE (which defaults to the seed’s proxy URL)',
  ),
  fixed_params: z
    .strictObject({
      undeclared_location: FixedLocation.default('body').describe(
        'Where an action parameter the tool’s spec does not declare goes (the seed: body)',
      ),
      pin_single_valued: z
        .boolean()
        .default(true)
        .describe('Fix a required argument the spec allows one value for (enum of one, const)'),
      hide_fixed: z
        .boolean()
        .default(true)
        .describe('Leave fixed arguments out of the model’s parameters and required'),
    })
    .prefault({}),
  schema: z
    .strictObject({
      strict: z.boolean().optional(),
      unions: z.enum(UnionMode).optional(),
      body_mode: z.enum(BodyMode).optional(),
      examples: z.enum(ExampleMode).optional(),
      refs: z.enum(RefMode).optional(),
      max_description_length: z.number().int().positive().optional(),
      max_enum_values: z.number().int().positive().optional(),
      max_depth: z.number().int().positive().optional(),
    })
    .prefault({})
    .describe('Options of the OpenAPI → function schema conversion (@agentmesh/openapi)'),
});
export type ConversionRules = z.infer<typeof ConversionRules>;

export const DEFAULT_CONVERSION_RULES: ConversionRules = ConversionRules.parse({});

/** The converter's options from the `schema` rules (absent rules keep the converter's defaults). */
export function conversionOptions(rules: ConversionRules): ConversionOptions {
  const { schema } = rules;
  return {
    ...(schema.strict === undefined ? {} : { strict: schema.strict }),
    ...(schema.unions === undefined ? {} : { unions: schema.unions }),
    ...(schema.body_mode === undefined ? {} : { bodyMode: schema.body_mode }),
    ...(schema.examples === undefined ? {} : { examples: schema.examples }),
    ...(schema.refs === undefined ? {} : { refs: schema.refs }),
    ...(schema.max_description_length === undefined
      ? {}
      : { maxDescriptionLength: schema.max_description_length }),
    ...(schema.max_enum_values === undefined ? {} : { maxEnumValues: schema.max_enum_values }),
    ...(schema.max_depth === undefined ? {} : { maxDepth: schema.max_depth }),
  };
}

/** Fills `{name}` placeholders; unknown ones were refused when the rules were read. */
export function fillTemplate(text: string, values: Readonly<Record<string, string>>): string {
  return text.replace(PLACEHOLDER, (whole, name: string) => values[name] ?? whole);
}
