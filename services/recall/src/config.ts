/**
 * The recall service's configuration: where its two upstreams live, how an action becomes a dynamic tool
 * (the proxy URL and the conversion rules), how patient it is with the upstreams, and how long it remembers
 * their answers.
 */
import { readFileSync } from 'node:fs';
import { describeZodError } from '@agentmesh/protocol';
import { baseConfigSchema } from '@agentmesh/runtime';
import { z } from 'zod';
import { ApiUrlTemplate, ConversionRules, DEFAULT_API_URL_TEMPLATE } from './conversion-rules.js';

export { DEFAULT_API_URL_TEMPLATE };

const BaseUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).refine((value) => {
  const url = new URL(value);
  return url.search === '' && url.hash === '';
}, 'must be a base URL without query or fragment');

/** JSON text of a rule set, each bad rule named by its path: `fixed_params.undeclared_location: ...`. */
function parseRules(text: string, ctx: z.RefinementCtx): ConversionRules {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `not JSON: ${(error as Error).message}` });
    return z.NEVER;
  }
  const rules = ConversionRules.safeParse(json);
  if (!rules.success) {
    ctx.addIssue({
      code: 'custom',
      message: `bad conversion rule: ${describeZodError(rules.error).message}`,
    });
    return z.NEVER;
  }
  return rules.data;
}

const InlineRules = z.string().transform(parseRules);

const RulesFile = z.string().transform((path, ctx) => {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `cannot read ${path}: ${(error as Error).message}` });
    return z.NEVER;
  }
  return parseRules(text, ctx);
});

/** `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`…; `z.coerce.boolean()` would read "false" as true. */
const Flag = z.stringbool({ error: 'must be true or false' });

const positiveInt = () => z.coerce.number().int().positive();

export const recallConfigSchema = baseConfigSchema
  .extend({
    ONTOLOGY_QUERY_URL: BaseUrl.describe(
      'Base URL of ontology-query; the action query is POSTed to <base>/api/ontology-query/v1/knowledge-networks/{kn_id}/action-types/{at_id}',
    ),
    OPERATOR_INTEGRATION_URL: BaseUrl.default('http://agent-operator-integration:9000').describe(
      'Base URL of agent-operator-integration; tool details are read from <base>/api/agent-operator-integration/internal-v1/tool-box/{box_id}/tool/{tool_id}',
    ),
    API_URL_TEMPLATE: ApiUrlTemplate.default(DEFAULT_API_URL_TEMPLATE).describe(
      'The api_url of each dynamic tool (the tool box proxy that executes it); {box_id} and {tool_id} are filled from the action source',
    ),
    UPSTREAM_TIMEOUT_MS: positiveInt()
      .max(120_000)
      .default(5_000)
      .describe('Bound on one upstream attempt (connect, headers and body)'),
    UPSTREAM_RETRIES: z.coerce
      .number()
      .int()
      .min(0)
      .max(10)
      .default(2)
      .describe(
        'Extra attempts, with jittered exponential backoff, for idempotent upstream calls (the tool detail GET) that time out, fail to connect or answer 429/5xx',
      ),
    CACHE_ENABLED: Flag.default(true).describe(
      'Whether tool details and action-query answers are cached (in memory and in JetStream KV)',
    ),
    TOOL_CACHE_TTL_MS: positiveInt()
      .default(10 * 60_000)
      .describe(
        'How long a tool detail and its converted schema are reused (KV mesh_recall_tools and memory)',
      ),
    TOOL_CACHE_MAX_ENTRIES: positiveInt()
      .default(1_000)
      .describe('Tool details kept in memory per instance (least recently used evicted first)'),
    ACTION_CACHE_TTL_MS: positiveInt()
      .default(30_000)
      .describe(
        'How long an action-query answer is reused per (account, kn_id, at_id, identities) (KV mesh_recall_actions and memory)',
      ),
    ACTION_CACHE_MAX_ENTRIES: positiveInt()
      .default(10_000)
      .describe('Action-query answers kept in memory per instance (least recently used evicted first)'),
    MAX_IDENTITIES_PER_REQUEST: positiveInt()
      .max(1_000)
      .default(50)
      .describe(
        'Most unique_identities one request may name: each is its own action query, so this bounds the upstream calls a request causes',
      ),
    CONVERSION_RULES: InlineRules.optional().describe(
      'The rules that turn an action into a dynamic tool, as JSON (see the README); unset: the seed’s behaviour',
    ),
    CONVERSION_RULES_FILE: RulesFile.optional().describe(
      'A JSON file holding the conversion rules, instead of CONVERSION_RULES',
    ),
  })
  .superRefine((config, ctx) => {
    // Both at once is refused: which one wins would be a guess.
    if (config.CONVERSION_RULES !== undefined && config.CONVERSION_RULES_FILE !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['CONVERSION_RULES_FILE'],
        message: 'set CONVERSION_RULES or CONVERSION_RULES_FILE, not both',
      });
    }
  });

export type RecallConfig = z.infer<typeof recallConfigSchema>;

/** The deployment's conversion rules, with the api_url template in force (the rules' `api_url` wins over `API_URL_TEMPLATE`). */
export function conversionRulesOf(config: RecallConfig): ConversionRules & { api_url: string } {
  const rules = config.CONVERSION_RULES ?? config.CONVERSION_RULES_FILE ?? ConversionRules.parse({});
  return { ...rules, api_url: rules.api_url ?? config.API_URL_TEMPLATE };
}
