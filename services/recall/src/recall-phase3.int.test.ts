// Seed 004 phase 3 on real NATS against recording servers standing in for ontology-query and the tool box:
// `action_type.condition` decides which actions are offered, several identities are recalled each on its own
// (the union of their tools, each failure reported beside the others), and the conversion rules come from the
// deployment's configuration.
import type { RecordedRequest } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  askRecall,
  expectError,
  expectMcpTools,
  expectTools,
  requestsTo,
  serveActions,
  serveTool,
  startHarness,
  uniqueIds,
  type RecallHarness,
  type RecallInstance,
} from './__fixtures__/recall-harness.js';
import { seedExample } from './__fixtures__/seed-004.js';

let harness: RecallHarness;
let instance: RecallInstance;

beforeAll(async () => {
  harness = await startHarness();
  instance = await harness.startInstance();
});

afterAll(async () => {
  await harness?.stop();
});

const { toolDetail } = seedExample('004-s11.1-response.json');

/** The one identity an action query asked about (recall asks once per identity). */
function askedIdentity(request: RecordedRequest): Record<string, unknown> {
  const body = request.body as { unique_identities?: Array<Record<string, unknown>> };
  return body.unique_identities?.[0] ?? {};
}

/** A fresh object whose action type carries `condition` (or `action_type` as given) and offers `actions`. */
function conditionScenario(
  label: string,
  actionType: unknown,
  actions: Array<{ parameters: Record<string, unknown> }> = [{ parameters: { 'x-account-id': 'test' } }],
) {
  const ids = uniqueIds(label);
  serveActions(harness.ontology, ids.knId, ids.atId, {
    body: {
      action_type: actionType,
      actions,
      action_source: { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId },
    },
  });
  serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: toolDetail });
  return (identity: Record<string, string | number>) => ({
    kn_id: ids.knId,
    at_id: ids.atId,
    unique_identity: identity,
  });
}

describe('action_type.condition', () => {
  it('when the action type’s condition holds for the object, its action is offered, and when it does not, none is', async () => {
    const request = conditionScenario('cond-identity', {
      id: 'generate_treatment_plan',
      condition: { field: 'disease_id', operation: 'prefix', value: 'disease_' },
    });
    const offered = expectTools(await askRecall(harness.client, request({ disease_id: 'disease_000001' })));
    expect(offered._dynamic_tools.map((tool) => tool.name)).toEqual([toolDetail.name]);
    const refused = expectTools(await askRecall(harness.client, request({ disease_id: 'symptom_000001' })));
    expect(refused._dynamic_tools).toEqual([]);
  });

  it('when several actions come back, the singular recall offers the first whose parameters satisfy the condition', async () => {
    const request = conditionScenario(
      'cond-parameters',
      {
        condition: {
          operation: 'and',
          sub_conditions: [
            { field: 'stage', operation: 'in', value: ['acute', 'severe'] },
            { field: 'severity', operation: '>=', value: 3 },
          ],
        },
      },
      [
        { parameters: { stage: 'chronic', severity: 5 } },
        { parameters: { stage: 'acute', severity: 2 } },
        { parameters: { stage: 'severe', severity: 4 } },
      ],
    );
    const [tool] = expectTools(await askRecall(harness.client, request({ disease_id: 'd1' })))._dynamic_tools;
    expect(tool?.fixed_params.body).toEqual({ stage: 'severe', severity: 4 });
  });

  it('when the condition names the account, an account of another type is offered nothing', async () => {
    const request = conditionScenario('cond-account', {
      condition: { field: 'account_type', operation: '==', value: 'org' },
    });
    const asUser = expectTools(await askRecall(harness.client, request({ disease_id: 'd1' })));
    expect(asUser._dynamic_tools).toEqual([]);
    const asOrg = expectTools(
      await askRecall(harness.client, request({ disease_id: 'd1' }), {
        account: { id: ACCOUNT.id, type: 'org' },
      }),
    );
    expect(asOrg._dynamic_tools).toHaveLength(1);
  });

  it('when the condition cannot be read, the answer is 502 SERVICE_UNAVAILABLE naming the bad part, and the service keeps answering', async () => {
    const unreadable = conditionScenario('cond-unreadable', {
      id: 'at_regex',
      condition: {
        operation: 'or',
        sub_conditions: [
          { field: 'stage', operation: '==', value: 'acute' },
          { field: 'disease_id', operation: 'regex', value: '(a+)+$' },
        ],
      },
    });
    const error = expectError(await askRecall(harness.client, unreadable({ disease_id: 'd1' })));
    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      message: expect.stringContaining('condition of action type "at_regex" cannot be read'),
      detail: {
        upstream: 'ontology-query',
        reason: 'unreadable_condition',
        action_type: 'at_regex',
        path: 'condition.sub_conditions[1].operation',
        problem: 'operation "regex" cannot be evaluated by recall',
      },
    });
    expect(
      instance.logs.some((line) => line.msg === 'recall refused' && line.code === 'SERVICE_UNAVAILABLE'),
    ).toBe(true);

    const readable = conditionScenario('cond-after', {
      condition: { field: 'disease_id', operation: 'exist' },
    });
    expect(
      expectTools(await askRecall(harness.client, readable({ disease_id: 'd1' })))._dynamic_tools,
    ).toHaveLength(1);
  });
});

describe('several identities in one request', () => {
  it('when one of three identities fails, the answer holds the tools of the others, one per name, and that identity’s error', async () => {
    const ids = uniqueIds('identities');
    const actionsPath = serveActions(harness.ontology, ids.knId, ids.atId, (request) => {
      const { disease_id } = askedIdentity(request);
      if (disease_id === 'd2') return { status: 503, body: { error: 'overloaded' } };
      // d3 is another name of d1's object: ontology-query answers d1's action again, plus its own.
      const actions =
        disease_id === 'd1'
          ? [{ parameters: { disease_id: 'd1' } }]
          : [{ parameters: { disease_id: 'd1' } }, { parameters: { disease_id: 'd3' } }];
      return { body: { actions, action_source: { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId } } };
    });
    const toolPath = serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: toolDetail });
    const identities = [{ disease_id: 'd1' }, { disease_id: 'd2' }, { disease_id: 'd3' }];
    const before = {
      actions: requestsTo(harness.ontology, actionsPath).length,
      tool: requestsTo(harness.toolBox, toolPath).length,
    };

    const body = expectTools(
      await askRecall(harness.client, { kn_id: ids.knId, at_id: ids.atId, unique_identities: identities }),
    );

    const queries = requestsTo(harness.ontology, actionsPath).slice(before.actions);
    expect(
      queries.map((query) => query.body).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    ).toEqual(identities.map((identity) => ({ unique_identities: [identity] })));
    expect(requestsTo(harness.toolBox, toolPath).length - before.tool).toBe(1);
    expect(body._dynamic_tools.map((tool) => tool.fixed_params.body)).toEqual([
      { disease_id: 'd1' },
      { disease_id: 'd3' },
    ]);
    expect(new Set(body._dynamic_tools.map((tool) => tool.name)).size).toBe(2);
    expect(body.failures).toEqual([
      {
        index: 1,
        unique_identity: { disease_id: 'd2' },
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('ontology-query'),
        detail: expect.objectContaining({ upstream: 'ontology-query', status: 503 }),
      },
    ]);
  });

  it('when the identities fail in different ways, each failure is its own, and the tools of the rest still come', async () => {
    const ids = uniqueIds('identities-mixed');
    serveActions(harness.ontology, ids.knId, ids.atId, (request) => {
      const { disease_id } = askedIdentity(request);
      const source =
        disease_id === 'mcp' ? { type: 'mcp' } : { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId };
      const actionType =
        disease_id === 'bad' ? { condition: { field: 'x', operation: 'knn', value: [1] } } : undefined;
      return {
        body: { action_type: actionType, actions: [{ parameters: { disease_id } }], action_source: source },
      };
    });
    serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: toolDetail });
    const body = expectTools(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identities: [{ disease_id: 'mcp' }, { disease_id: 'ok' }, { disease_id: 'bad' }],
      }),
    );
    expect(body._dynamic_tools.map((tool) => tool.fixed_params.body)).toEqual([{ disease_id: 'ok' }]);
    expect(body.failures?.map((failure) => [failure.index, failure.code])).toEqual([
      [0, 'UNSUPPORTED_ACTION_TYPE'],
      [2, 'SERVICE_UNAVAILABLE'],
    ]);
  });

  it('when every identity fails, the answer is the first failure’s error with every failure in its detail', async () => {
    const ids = uniqueIds('identities-all-fail');
    serveActions(harness.ontology, ids.knId, ids.atId, { status: 503, body: { error: 'down' } });
    const error = expectError(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identities: [{ disease_id: 'a' }, { disease_id: 'b' }],
      }),
    );
    expect(error.status).toBe(502);
    expect(error.body.code).toBe('SERVICE_UNAVAILABLE');
    expect(error.body.message).toMatch(/^none of the 2 identities could be recalled: /);
    const { failures } = error.body.detail as {
      failures: Array<{ index: number; unique_identity: unknown }>;
    };
    expect(failures.map((failure) => [failure.index, failure.unique_identity])).toEqual([
      [0, { disease_id: 'a' }],
      [1, { disease_id: 'b' }],
    ]);
  });
});

describe('identities per request', () => {
  it('when a request names more identities than MAX_IDENTITIES_PER_REQUEST, it is INVALID_REQUEST and ontology-query is not asked', async () => {
    const ids = uniqueIds('too-many');
    const actionsPath = serveActions(harness.ontology, ids.knId, ids.atId, { body: { actions: [] } });
    const identities = Array.from({ length: 51 }, (_, i) => ({ disease_id: `d${i}` }));
    const error = expectError(
      await askRecall(harness.client, { kn_id: ids.knId, at_id: ids.atId, unique_identities: identities }),
    );
    expect(error.status).toBe(400);
    expect(error.body).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'unique_identities: at most 50 identities per request (each is its own action query)',
    });
    expect(requestsTo(harness.ontology, actionsPath)).toHaveLength(0);
    const fifty = identities.slice(0, 50);
    const answer = expectTools(
      await askRecall(harness.client, { kn_id: ids.knId, at_id: ids.atId, unique_identities: fifty }),
    );
    expect(answer._dynamic_tools).toEqual([]);
    expect(requestsTo(harness.ontology, actionsPath)).toHaveLength(50);
  });
});

describe('mcp action sources (seed 004 phase 3)', () => {
  it('an object whose actions run on an MCP server is answered with an MCP dynamic tool: server, tool name, fixed arguments; no tool box call', async () => {
    const ids = uniqueIds('mcp-source');
    const toolPath = serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: {} });
    serveActions(harness.ontology, ids.knId, ids.atId, {
      body: {
        action_type: { name: 'Look a patient up' },
        actions: [{ parameters: { patient_id: 'p-7' }, dynamic_params: { fields: null } }],
        action_source: { type: 'mcp', mcp_server: 'crm', tool_name: 'lookup_patient' },
      },
    });
    const [tool, ...more] = expectMcpTools(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identity: { patient_id: 'p-7' },
      }),
    );
    expect(more).toEqual([]);
    expect(tool).toEqual({
      name: 'lookup_patient',
      description: 'Look a patient up',
      parameters: { type: 'object', properties: { fields: {} } },
      mcp: { server: 'crm', tool_name: 'lookup_patient' },
      fixed_arguments: { patient_id: 'p-7' },
    });
    expect(requestsTo(harness.toolBox, toolPath)).toHaveLength(0);
  });

  it('several identities on an MCP source answer one tool per distinct action, each with its action id', async () => {
    const ids = uniqueIds('mcp-source-plural');
    serveActions(harness.ontology, ids.knId, ids.atId, (request) => ({
      body: {
        actions: [{ parameters: askedIdentity(request) }],
        action_source: { type: 'mcp', mcp_server: 'crm', tool_name: 'lookup_patient' },
      },
    }));
    const tools = expectMcpTools(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identities: [{ patient_id: 'a' }, { patient_id: 'b' }],
      }),
    );
    expect(
      tools
        .map((tool) => tool.fixed_arguments)
        .sort((x, y) => String(x.patient_id).localeCompare(String(y.patient_id))),
    ).toEqual([{ patient_id: 'a' }, { patient_id: 'b' }]);
    for (const tool of tools) {
      expect(tool.name).toMatch(new RegExp(`^lookup_patient_${tool.action_id}$`));
      expect(tool.mcp).toEqual({ server: 'crm', tool_name: 'lookup_patient' });
    }
  });
});

describe('conversion rules from the configuration', () => {
  let ruled: RecallInstance;
  beforeAll(async () => {
    // The default instance leaves the queue group, so the ruled one answers.
    await instance.stop();
    ruled = await harness.startInstance({
      CONVERSION_RULES: JSON.stringify({
        tool_name: '{at_id}__{tool_name}',
        description: '[{kn_id}] {tool_description}',
        api_url: 'https://proxy.internal/boxes/{box_id}/tools/{tool_id}/run',
        fixed_params: { undeclared_location: 'header' },
        schema: { strict: true },
      }),
    });
  });
  afterAll(async () => {
    await ruled?.stop();
  });

  it('when the deployment sets name, description, api_url, fixed-parameter and schema rules, the tools follow them', async () => {
    const ids = uniqueIds('rules');
    serveActions(harness.ontology, ids.knId, ids.atId, {
      body: {
        actions: [{ parameters: { tenant: 't1', kn_id: 'kn_medical' } }],
        action_source: { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId },
      },
    });
    serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: toolDetail });
    const [tool] = expectTools(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identity: { disease_id: 'd1' },
      }),
    )._dynamic_tools;
    expect(tool?.name).toBe(`${ids.atId}__${toolDetail.name}`);
    expect(tool?.description).toBe(`[${ids.knId}] ${toolDetail.description}`);
    expect(tool?.api_url).toBe(`https://proxy.internal/boxes/${ids.boxId}/tools/${ids.toolId}/run`);
    expect(tool?.fixed_params).toEqual({
      header: { tenant: 't1', 'X-HTTP-Method-Override': 'GET' },
      path: { kn_id: 'kn_medical' },
      query: {},
      body: {},
    });
    // strict: OpenAI's structured-outputs variant, a closed object.
    expect(tool?.parameters.additionalProperties).toBe(false);
  });
});
