// Contract of the recall service against recording servers standing in for ontology-query and the tool box:
// what the upstreams receive, the seed's answer shape, plural recall, caching (also across instances) and
// discovery as a NATS micro service.
import { Buckets, Services } from '@agentmesh/protocol';
import { Kvm } from '@nats-io/kv';
import { taskRootContext } from '@agentmesh/runtime';
import { Svcm, type ServiceInfo, type ServiceStats } from '@nats-io/services';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  askRecall,
  expectTools,
  requestsTo,
  serveActions,
  serveTool,
  startHarness,
  uniqueIds,
  type RecallHarness,
  type RecallInstance,
} from './__fixtures__/recall-harness.js';
import {
  seedActionQueryAnswer,
  seedExample,
  seedFixture,
  SEED_ACTION_SOURCE,
} from './__fixtures__/seed-004.js';
import { RECALL_QUEUE_GROUP } from './recall-service.js';

let harness: RecallHarness;

beforeAll(async () => {
  harness = await startHarness();
});

afterAll(async () => {
  await harness?.stop();
});

const SEED_REQUEST = {
  kn_id: 'kn_medical',
  at_id: 'generate_treatment_plan',
  ...seedFixture<object>('004-s11.1-request.json'),
};
const UPSTREAM_SPANS = ['ontology-query POST', 'agent-operator-integration GET'];

function propertyOf(parameters: { properties?: Record<string, unknown> } | undefined, name: string) {
  return (parameters?.properties?.[name] ?? {}) as { type?: unknown; description?: unknown };
}

/** Upstream requests made while `run` ran. */
async function countUpstreamCalls(paths: { actions: string; tool: string }, run: () => Promise<unknown>) {
  const before = {
    actions: requestsTo(harness.ontology, paths.actions).length,
    tool: requestsTo(harness.toolBox, paths.tool).length,
  };
  await run();
  return {
    actions: requestsTo(harness.ontology, paths.actions).length - before.actions,
    tool: requestsTo(harness.toolBox, paths.tool).length - before.tool,
  };
}

/** A fresh object with one tool action, served by both upstreams. */
function serveFreshObject(label: string) {
  const ids = uniqueIds(label);
  const paths = {
    actions: serveActions(harness.ontology, ids.knId, ids.atId, {
      body: seedActionQueryAnswer({ type: 'tool', box_id: ids.boxId, tool_id: ids.toolId }),
    }),
    tool: serveTool(harness.toolBox, ids.boxId, ids.toolId, {
      body: seedExample('004-s3.1-response.json').toolDetail,
    }),
  };
  const request = { kn_id: ids.knId, at_id: ids.atId, unique_identity: { disease_id: `${label}-1` } };
  return { ids, paths, request };
}

describe('without caching', () => {
  let uncached: RecallInstance;
  beforeAll(async () => {
    uncached = await harness.startInstance({ CACHE_ENABLED: 'false' });
  });
  afterAll(async () => {
    await uncached?.stop();
  });

  it.each([
    ['the appendix (§11)', '004-s11.1-response.json'],
    ['the interface example (§3.1)', '004-s3.1-response.json'],
  ] as const)(
    'when recalling the seed object, ontology-query gets {"unique_identities":[...]} with the account headers and the answer has %s’s shape',
    async (_example, file) => {
      const { expected, toolDetail } = seedExample(file);
      const actionsPath = serveActions(harness.ontology, SEED_REQUEST.kn_id, SEED_REQUEST.at_id, {
        body: seedActionQueryAnswer(),
      });
      const toolPath = serveTool(harness.toolBox, SEED_ACTION_SOURCE.box_id, SEED_ACTION_SOURCE.tool_id, {
        body: toolDetail,
      });
      const actionsBefore = requestsTo(harness.ontology, actionsPath).length;
      const toolBefore = requestsTo(harness.toolBox, toolPath).length;

      const traceId = file.startsWith('004-s11')
        ? '4bf92f3577b34da6a3ce929d0e0e4736'
        : '0af7651916cd43dd8448eb211c80319c';
      const body = expectTools(
        await askRecall(harness.client, SEED_REQUEST, { traceContext: taskRootContext(traceId) }),
      );

      const [actionQuery] = requestsTo(harness.ontology, actionsPath).slice(actionsBefore);
      expect(actionQuery?.method).toBe('POST');
      expect(actionQuery?.bodyText).toBe('{"unique_identities":[{"disease_id":"disease_000001"}]}');
      const [toolRequest] = requestsTo(harness.toolBox, toolPath).slice(toolBefore);
      expect(toolRequest?.method).toBe('GET');
      for (const upstream of [actionQuery, toolRequest]) {
        expect(upstream?.headers).toMatchObject({
          'x-account-id': ACCOUNT.id,
          'x-account-type': ACCOUNT.type,
        });
        expect(upstream?.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      }

      expect(body._dynamic_tools).toHaveLength(1);
      const [tool] = body._dynamic_tools;
      expect(tool).toMatchObject({
        name: expected.name,
        description: expected.description,
        api_url: expected.api_url,
        original_schema: expected.original_schema,
      });
      expect(tool).not.toHaveProperty('action_id');
      // The seed's own action query output (§4.3.1) is the source of the account values in fixed_params.
      expect(tool?.fixed_params).toEqual(expected.fixed_params);
      expect(Object.keys(tool?.parameters.properties ?? {})).toEqual(
        Object.keys(expected.parameters.properties),
      );
      for (const [name, property] of Object.entries(expected.parameters.properties)) {
        expect(propertyOf(tool?.parameters, name).type, name).toBe(property.type);
      }
      expect(tool?.parameters.required).toEqual(expected.parameters.required);
      expect(propertyOf(tool?.parameters, 'kn_id').description).toBe(
        expected.parameters.properties.kn_id?.description,
      );

      // One span per upstream call, in the caller's trace; their ids are the traceparents the upstreams saw.
      const upstreamSpans = harness.spans
        .getFinishedSpans()
        .filter((span) => span.spanContext().traceId === traceId && UPSTREAM_SPANS.includes(span.name));
      expect(upstreamSpans.map((span) => span.name).sort()).toEqual([...UPSTREAM_SPANS].sort());
      const sentSpanIds = [actionQuery, toolRequest].map((r) => String(r?.headers.traceparent).split('-')[2]);
      expect(upstreamSpans.map((span) => span.spanContext().spanId).sort()).toEqual(sentSpanIds.sort());
    },
  );

  it('when caching is off, every identical request calls both upstreams again', async () => {
    const { paths, request } = serveFreshObject('uncached');
    const calls = await countUpstreamCalls(paths, async () => {
      for (let i = 0; i < 3; i += 1) expectTools(await askRecall(harness.client, request));
    });
    expect(calls).toEqual({ actions: 3, tool: 3 });
  });
});

describe('with caching', () => {
  let firstInstance: RecallInstance;
  beforeAll(async () => {
    firstInstance = await harness.startInstance();
  });
  afterAll(async () => {
    await firstInstance?.stop();
  });

  it('when the same request comes again, it is answered from the cache with zero upstream calls, and again by a second instance', async () => {
    const { paths, request } = serveFreshObject('cached');
    const firstAnswer = expectTools(await askRecall(harness.client, request));
    expect(firstAnswer._dynamic_tools).toHaveLength(1);

    const again = await countUpstreamCalls(paths, async () => {
      expect(expectTools(await askRecall(harness.client, request))).toEqual(firstAnswer);
    });
    expect(again).toEqual({ actions: 0, tool: 0 });
    expect(firstInstance.logs.filter((line) => line.msg === 'recall answered').at(-1)).toMatchObject({
      actions_from: 'memory',
      tool_from: 'memory',
    });

    // Only the second instance is left in the queue group: it has never seen the request, but KV has.
    const secondInstance = await harness.startInstance();
    await firstInstance.stop();
    try {
      const fromSecond = await countUpstreamCalls(paths, async () => {
        expect(expectTools(await askRecall(harness.client, request))).toEqual(firstAnswer);
      });
      expect(fromSecond).toEqual({ actions: 0, tool: 0 });
      expect(secondInstance.logs.filter((line) => line.msg === 'recall answered').at(-1)).toMatchObject({
        actions_from: 'shared',
        tool_from: 'shared',
      });
    } finally {
      await secondInstance.stop();
      firstInstance = await harness.startInstance();
    }
  });

  it('when another account recalls the same object, the action query is asked again but the tool comes from the cache', async () => {
    const { paths, request } = serveFreshObject('per-account');
    expectTools(await askRecall(harness.client, request));
    const calls = await countUpstreamCalls(paths, async () => {
      expectTools(
        await askRecall(harness.client, request, { account: { id: 'another-account', type: 'user' } }),
      );
    });
    expect(calls).toEqual({ actions: 1, tool: 0 });
    const [last] = requestsTo(harness.ontology, paths.actions).slice(-1);
    expect(last?.headers['x-account-id']).toBe('another-account');
  });

  it('when two identical requests arrive together, the upstreams are asked once', async () => {
    const ids = uniqueIds('together');
    const actionsPath = serveActions(
      harness.ontology,
      ids.knId,
      ids.atId,
      { body: seedActionQueryAnswer({ type: 'tool', box_id: ids.boxId, tool_id: ids.toolId }) },
      150,
    );
    const toolPath = serveTool(harness.toolBox, ids.boxId, ids.toolId, {
      body: seedExample('004-s3.1-response.json').toolDetail,
    });
    const request = { kn_id: ids.knId, at_id: ids.atId, unique_identity: { disease_id: 'together' } };
    const calls = await countUpstreamCalls({ actions: actionsPath, tool: toolPath }, async () => {
      const answers = await Promise.all([
        askRecall(harness.client, request),
        askRecall(harness.client, request),
      ]);
      expect(expectTools(answers[0])).toEqual(expectTools(answers[1]));
    });
    expect(calls).toEqual({ actions: 1, tool: 1 });
  });

  it('when an action’s fixed parameters carry a secret-named key, its answer is cached in memory only, never in KV', async () => {
    const actionsBucket = await new Kvm(harness.client).open(Buckets.RECALL_ACTIONS);
    const storedAnswers = async () => (await actionsBucket.status()).values;
    const CANARY = 'canary-bearer-7f3a9c';

    const plain = serveFreshObject('kv-plain');
    const beforePlain = await storedAnswers();
    expectTools(await askRecall(harness.client, plain.request));
    expect(await storedAnswers()).toBe(beforePlain + 1);

    const ids = uniqueIds('kv-secret');
    const actionsPath = serveActions(harness.ontology, ids.knId, ids.atId, {
      body: {
        actions: [{ parameters: { 'x-account-id': 'test', Authorization: `Bearer ${CANARY}` } }],
        action_source: { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId },
      },
    });
    serveTool(harness.toolBox, ids.boxId, ids.toolId, {
      body: seedExample('004-s3.1-response.json').toolDetail,
    });
    const request = { kn_id: ids.knId, at_id: ids.atId, unique_identity: { disease_id: 'kv-secret' } };
    const beforeSecret = await storedAnswers();
    const [tool] = expectTools(await askRecall(harness.client, request))._dynamic_tools;
    // Undeclared in the tool's spec, so placed in the body by the seed's rule.
    expect(tool?.fixed_params.body).toEqual({ Authorization: `Bearer ${CANARY}` });
    expect(await storedAnswers()).toBe(beforeSecret);
    // Still cached in this instance's memory.
    expectTools(await askRecall(harness.client, request));
    expect(requestsTo(harness.ontology, actionsPath)).toHaveLength(1);
    expect(firstInstance.logs.some((line) => JSON.stringify(line).includes(CANARY))).toBe(false);
  });

  it('when unique_identities names several objects, each is asked about on its own, the tool detail is fetched once, and each action becomes its own tool with a distinct legal name and action_id', async () => {
    const ids = uniqueIds('plural');
    const identities = [{ disease_id: 'd1' }, { disease_id: 'd2' }, { disease_id: 'd3' }];
    // Each query asks about one object, and ontology-query answers that object's action.
    const actionsPath = serveActions(harness.ontology, ids.knId, ids.atId, (query) => ({
      body: {
        actions: (query.body as { unique_identities: object[] }).unique_identities.map((identity) => ({
          parameters: { 'x-account-id': 'test', 'x-account-type': 'user', ...identity },
          dynamic_params: { limit: null },
        })),
        action_source: { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId },
      },
    }));
    const { toolDetail } = seedExample('004-s11.1-response.json');
    const toolPath = serveTool(harness.toolBox, ids.boxId, ids.toolId, { body: toolDetail });

    let body: Awaited<ReturnType<typeof expectTools>> | undefined;
    const calls = await countUpstreamCalls({ actions: actionsPath, tool: toolPath }, async () => {
      body = expectTools(
        await askRecall(harness.client, { kn_id: ids.knId, at_id: ids.atId, unique_identities: identities }),
      );
    });
    expect(calls).toEqual({ actions: 3, tool: 1 });
    const asked = requestsTo(harness.ontology, actionsPath)
      .slice(-3)
      .map((query) => JSON.stringify(query.body))
      .sort();
    expect(asked).toEqual(
      identities.map((identity) => JSON.stringify({ unique_identities: [identity] })).sort(),
    );

    const tools = body?._dynamic_tools ?? [];
    expect(tools).toHaveLength(3);
    const names = tools.map((tool) => tool.name);
    const actionIds = tools.map((tool) => tool.action_id);
    expect(new Set(names).size).toBe(3);
    expect(new Set(actionIds).size).toBe(3);
    for (const name of names) expect(name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    for (const actionId of actionIds) expect(actionId).toEqual(expect.any(String));
    expect(tools.map((tool) => tool.fixed_params.body)).toEqual(identities);
    for (const tool of tools)
      expect(tool.fixed_params.header).toMatchObject({ 'X-HTTP-Method-Override': 'GET' });
  });
});

describe('as a NATS micro service', () => {
  let instances: RecallInstance[] = [];
  beforeAll(async () => {
    instances = [await harness.startInstance(), await harness.startInstance()];
  });
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.stop()));
  });

  async function collect<T>(replies: Promise<AsyncIterable<T>>): Promise<T[]> {
    const found: T[] = [];
    for await (const reply of await replies) found.push(reply);
    return found;
  }

  it('when $SRV.PING, INFO and STATS ask for recall, every instance answers, in one queue group on mesh.recall.actions', async () => {
    // A cast: @nats-io/services types its own (prerelease) nats-core; see micro-service.ts.
    const services = new Svcm(harness.client as never).client();
    const pings = await collect(services.ping(Services.RECALL.name));
    expect(pings).toHaveLength(2);
    expect(new Set(pings.map((ping) => ping.id)).size).toBe(2);
    expect(pings.every((ping) => ping.name === 'recall')).toBe(true);

    const infos: ServiceInfo[] = await collect(services.info(Services.RECALL.name));
    expect(infos).toHaveLength(2);
    for (const info of infos) {
      expect(info.endpoints).toEqual([
        expect.objectContaining({
          name: 'actions',
          subject: Services.RECALL.subject,
          queue_group: RECALL_QUEUE_GROUP,
        }),
      ]);
    }

    const { request } = serveFreshObject('stats');
    for (let i = 0; i < 4; i += 1) expectTools(await askRecall(harness.client, request));
    const stats: ServiceStats[] = await collect(services.stats(Services.RECALL.name));
    const served = stats
      .flatMap((stat) => stat.endpoints ?? [])
      .reduce((sum, endpoint) => sum + endpoint.num_requests, 0);
    expect(served).toBe(4);
  });
});
