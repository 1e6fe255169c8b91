/**
 * The recall service's configuration: where its two upstreams live, how the proxy URL of a dynamic tool is
 * built, how patient it is with the upstreams, and how long it remembers their answers.
 */
import { baseConfigSchema } from '@agentmesh/runtime';
import { z } from 'zod';

export const DEFAULT_API_URL_TEMPLATE =
  'http://agent-operator-integration:9000/api/agent-operator-integration/internal-v1/tool-box/{box_id}/proxy/{tool_id}';

const BaseUrl = z.url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' }).refine((value) => {
  const url = new URL(value);
  return url.search === '' && url.hash === '';
}, 'must be a base URL without query or fragment');

const ApiUrlTemplate = z
  .string()
  .refine(
    (value) => value.includes('{box_id}') && value.includes('{tool_id}'),
    'must contain the placeholders {box_id} and {tool_id}',
  )
  .refine((value) => {
    try {
      const url = new URL(value.replaceAll('{box_id}', 'b').replaceAll('{tool_id}', 't'));
      return url.protocol === 'http:' || url.protocol === 'https:';
    } catch {
      return false;
    }
  }, 'must be an absolute http(s) URL once the placeholders are filled');

/** `true`/`false`, `1`/`0`, `yes`/`no`, `on`/`off`…; `z.coerce.boolean()` would read "false" as true. */
const Flag = z.stringbool({ error: 'must be true or false' });

const positiveInt = () => z.coerce.number().int().positive();

export const recallConfigSchema = baseConfigSchema.extend({
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
    .describe('How long a tool detail and its converted schema are reused (KV mesh_recall_tools and memory)'),
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
});

export type RecallConfig = z.infer<typeof recallConfigSchema>;
