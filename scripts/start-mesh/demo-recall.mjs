// Seed 004 (action recall) out of the box for npm start's demo: a DEMO ontology-query upstream and a DEMO
// operator tool box (tool detail and execution proxy), small HTTP servers on loopback answering in the
// shapes services/recall/README.md documents, and a recall-driven demo agent whose scripted model walks the
// whole flow: recall_actions → the `_dynamic_tools` it answers → a call of that dynamic tool → the tool
// box proxy answers → done. Nothing here is an LLM or a real ontology: every answer is fixed and labelled.
import { say } from './output.mjs';
import { onStop } from './process-tree.mjs';

export const DEMO_RECALL_AGENT = 'demo_recall_agent';
/** The object the demo recalls actions for, as seed 004's own example. */
export const DEMO_RECALL_OBJECT = {
  kn_id: 'kn_medical',
  at_id: 'generate_treatment_plan',
  unique_identity: { disease_id: 'disease_000001' },
};
/** The dynamic tool recall makes of the demo action (the tool detail's name). */
export const DEMO_DYNAMIC_TOOL = 'demo_generate_treatment_plan';

const BOX_ID = 'demo-box';
const TOOL_ID = 'demo-treatment-plan';
const TOOL_BOX_PREFIX = '/api/agent-operator-integration/internal-v1/tool-box';

/** The tool detail (seed 004 §4.4.1): an OpenAPI operation; its account headers are fixed by the action. */
const TOOL_DETAIL = {
  name: DEMO_DYNAMIC_TOOL,
  description: '[DEMO] Drafts a treatment plan for a disease (demo operator API on loopback).',
  api_spec: {
    parameters: [
      { name: 'x-account-id', in: 'header', required: true, schema: { type: 'string' } },
      { name: 'x-account-type', in: 'header', required: true, schema: { type: 'string' } },
    ],
    request_body: {
      content: {
        'application/json': {
          schema: {
            type: 'object',
            properties: {
              disease_id: { type: 'string', description: 'the disease the plan treats' },
              days: { type: 'integer', description: 'how many days the plan covers' },
            },
            required: ['disease_id'],
          },
        },
      },
    },
  },
};

/**
 * Starts the two demo upstreams; resolves with the environment the recall service needs to use them
 * (ONTOLOGY_QUERY_URL, OPERATOR_INTEGRATION_URL, API_URL_TEMPLATE). Both stop with the mesh.
 */
export async function startRecallDemoUpstreams() {
  const { startRecordingApi } = await import('@agentmesh/testkit');
  const ontology = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/api/ontology-query/v1/knowledge-networks/:kn_id/action-types/:at_id',
        // Every object offers one action: the tool box's treatment-plan tool, for the caller's account.
        reply: (request) => ({
          status: 200,
          body: {
            actions: [
              {
                parameters: {
                  'x-account-id': request.headers['x-account-id'] ?? '',
                  'x-account-type': request.headers['x-account-type'] ?? '',
                },
                dynamic_params: { disease_id: null, days: null },
              },
            ],
            action_source: { type: 'tool', box_id: BOX_ID, tool_id: TOOL_ID },
          },
        }),
      },
    ],
  });
  onStop(() => ontology.stop());
  const toolBox = await startRecordingApi({
    routes: [
      {
        method: 'GET',
        path: `${TOOL_BOX_PREFIX}/:box_id/tool/:tool_id`,
        reply: { status: 200, body: TOOL_DETAIL },
      },
      {
        method: 'POST',
        path: `${TOOL_BOX_PREFIX}/:box_id/proxy/:tool_id`,
        reply: (request) => ({
          status: 200,
          body: {
            source: '[DEMO OPERATOR API]',
            disease_id: request.body?.disease_id ?? null,
            plan: [
              `day 1-${request.body?.days ?? 7}: rest and fluids`,
              'see a doctor if the fever lasts past day 3',
            ],
          },
        }),
      },
    ],
  });
  onStop(() => toolBox.stop());
  say(
    `DEMO recall upstreams (fixed answers, not a real ontology): ontology-query at ${ontology.url}; operator tool box at ${toolBox.url}`,
  );
  return {
    ONTOLOGY_QUERY_URL: ontology.url,
    OPERATOR_INTEGRATION_URL: toolBox.url,
    API_URL_TEMPLATE: `${toolBox.url}${TOOL_BOX_PREFIX}/{box_id}/proxy/{tool_id}`,
  };
}

/** What the demo recall model answers: recall, then the recalled tool, then the tool's answer as text. */
function recallScript(request) {
  const { messages, tools = [] } = request.body;
  const last = messages.at(-1);
  const calledDynamic = messages.some((message) =>
    message.tool_calls?.some((call) => call.function.name === DEMO_DYNAMIC_TOOL),
  );
  if (last?.role === 'tool' && calledDynamic) {
    return { content: `[DEMO MODEL] The operator API answered: ${last.content}`, chunkSize: 12 };
  }
  if (tools.some((tool) => tool.function?.name === DEMO_DYNAMIC_TOOL)) {
    return {
      toolCalls: [{ name: DEMO_DYNAMIC_TOOL, arguments: { disease_id: 'disease_000001', days: 7 } }],
    };
  }
  return { toolCalls: [{ name: 'recall_actions', arguments: DEMO_RECALL_OBJECT }] };
}

/**
 * Registers `demo_recall_agent` (native tool `recall_actions`) in the demo account with a scripted model
 * of its own; `admin(method, path, body)` calls the management API as the demo account. The model key is
 * the demo's `DEMO_MODEL_KEY` credential, as for `demo_agent`.
 */
export async function registerRecallDemo(admin) {
  const { startScriptedModel } = await import('@agentmesh/testkit');
  const model = await startScriptedModel({ respond: recallScript });
  onStop(() => model.stop());
  // PUT: a kept data directory has it from an earlier run, pointing at that run's demo model.
  await admin('PUT', `/agents/${DEMO_RECALL_AGENT}`, {
    workflow_id: DEMO_RECALL_AGENT,
    system_prompt: 'You find what can be done for an object with recall_actions, then do it.',
    model: {
      model_name: 'demo-scripted-recall',
      base_url: model.baseUrl,
      api_key_credential: 'DEMO_MODEL_KEY',
    },
    tools: ['recall_actions'],
  });
  say(
    `demo recall agent \`${DEMO_RECALL_AGENT}\` registered (seed 004: recall_actions → dynamic tool ${DEMO_DYNAMIC_TOOL} → demo operator API); submit to it as to demo_agent`,
  );
}
