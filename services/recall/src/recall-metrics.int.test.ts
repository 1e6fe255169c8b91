// Recall metrics (seed 004 phase 3) read from the real SDK through the telemetry meter provider: requests by
// outcome and their latency, upstream attempts by upstream and outcome, cache lookups by cache and result.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ACCOUNT,
  askRecall,
  expectError,
  expectTools,
  serveActions,
  serveTool,
  startHarness,
  uniqueIds,
  UPSTREAM_RETRIES,
  type RecallHarness,
} from './__fixtures__/recall-harness.js';
import { seedActionQueryAnswer, seedExample } from './__fixtures__/seed-004.js';
import { RecallMetric } from './recall-metrics.js';

let harness: RecallHarness;

beforeAll(async () => {
  harness = await startHarness();
});

afterAll(async () => {
  await harness?.stop();
});

const ONTOLOGY = 'ontology-query';
const TOOL_BOX = 'agent-operator-integration';

/** An object whose action query and tool detail answer as given (a tool action and the seed's tool by default). */
function serveObject(
  label: string,
  replies: { actions?: Parameters<typeof serveActions>[3]; tool?: Parameters<typeof serveTool>[3] } = {},
) {
  const ids = uniqueIds(label);
  const source = { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId };
  serveActions(
    harness.ontology,
    ids.knId,
    ids.atId,
    replies.actions ?? { body: seedActionQueryAnswer(source) },
  );
  serveTool(
    harness.toolBox,
    ids.boxId,
    ids.toolId,
    replies.tool ?? { body: seedExample('004-s3.1-response.json').toolDetail },
  );
  return {
    ids,
    request: { kn_id: ids.knId, at_id: ids.atId, unique_identity: { disease_id: `${label}-1` } },
  };
}

/** The summed value (a histogram's count) of a metric's points whose attributes include `attributes`. */
async function counted(name: string, attributes: Record<string, unknown>): Promise<number> {
  return (await harness.metrics.points(name))
    .filter((point) => Object.entries(attributes).every(([key, value]) => point.attributes[key] === value))
    .reduce((sum, point) => sum + (typeof point.value === 'number' ? point.value : point.value.count), 0);
}

/** What `run` added to each of `queries`, by label. */
async function added<K extends string>(
  queries: Record<K, [string, Record<string, unknown>]>,
  run: () => Promise<unknown>,
): Promise<Record<K, number>> {
  const entries = Object.entries(queries) as Array<[K, [string, Record<string, unknown>]]>;
  const before = await Promise.all(entries.map(([, [name, attributes]]) => counted(name, attributes)));
  await run();
  const after = await Promise.all(entries.map(([, [name, attributes]]) => counted(name, attributes)));
  return Object.fromEntries(entries.map(([label], i) => [label, after[i]! - before[i]!])) as Record<
    K,
    number
  >;
}

describe('with caching', () => {
  it('a first recall counts an ok request, an ok call to each upstream and a miss in each cache; again, memory hits; on a new instance, shared hits', async () => {
    const { ids, request } = serveObject('cached');
    const queries = {
      ok: [RecallMetric.REQUESTS, { outcome: 'ok' }],
      latencies: [RecallMetric.DURATION, { outcome: 'ok' }],
      ontologyOk: [RecallMetric.UPSTREAM_CALLS, { upstream: ONTOLOGY, outcome: 'ok' }],
      toolBoxOk: [RecallMetric.UPSTREAM_CALLS, { upstream: TOOL_BOX, outcome: 'ok' }],
      upstreamLatencies: [RecallMetric.UPSTREAM_DURATION, { outcome: 'ok' }],
      actionsMiss: [RecallMetric.CACHE_LOOKUPS, { cache: 'actions', result: 'miss' }],
      toolsMiss: [RecallMetric.CACHE_LOOKUPS, { cache: 'tools', result: 'miss' }],
      actionsMemory: [RecallMetric.CACHE_LOOKUPS, { cache: 'actions', result: 'memory_hit' }],
      toolsMemory: [RecallMetric.CACHE_LOOKUPS, { cache: 'tools', result: 'memory_hit' }],
      actionsShared: [RecallMetric.CACHE_LOOKUPS, { cache: 'actions', result: 'shared_hit' }],
      toolsShared: [RecallMetric.CACHE_LOOKUPS, { cache: 'tools', result: 'shared_hit' }],
    } satisfies Record<string, [string, Record<string, unknown>]>;
    const first = await harness.startInstance();

    expect(await added(queries, async () => expectTools(await askRecall(harness.client, request)))).toEqual({
      ok: 1,
      latencies: 1,
      ontologyOk: 1,
      toolBoxOk: 1,
      upstreamLatencies: 2,
      actionsMiss: 1,
      toolsMiss: 1,
      actionsMemory: 0,
      toolsMemory: 0,
      actionsShared: 0,
      toolsShared: 0,
    });
    expect(
      await added(queries, async () => expectTools(await askRecall(harness.client, request))),
    ).toMatchObject({
      ok: 1,
      ontologyOk: 0,
      toolBoxOk: 0,
      actionsMiss: 0,
      toolsMiss: 0,
      actionsMemory: 1,
      toolsMemory: 1,
    });

    // A new instance finds what the first wrote to the shared KV buckets.
    await first.stop();
    const second = await harness.startInstance();
    expect(
      await added(queries, async () => expectTools(await askRecall(harness.client, request))),
    ).toMatchObject({
      ok: 1,
      ontologyOk: 0,
      toolBoxOk: 0,
      actionsShared: 1,
      toolsShared: 1,
    });
    await second.stop();

    const values = (
      await Promise.all(Object.values(RecallMetric).map((name) => harness.metrics.points(name)))
    ).flatMap((points) => points.flatMap((point) => Object.values(point.attributes).map(String)));
    for (const id of [ids.knId, ids.atId, ids.boxId, ids.toolId, ACCOUNT.id, 'cached-1']) {
      expect(values.filter((value) => value.includes(id))).toEqual([]);
    }
  });
});

describe('failures', () => {
  it('refusals count by error code, and every failing upstream attempt by reason and status, retries included', async () => {
    const instance = await harness.startInstance({ CACHE_ENABLED: 'false' });
    const unavailable = serveObject('tool-503', { tool: { status: 503, body: 'down' } });
    const mcp = serveObject('mcp', {
      actions: { body: seedActionQueryAnswer({ type: 'mcp', box_id: 'b', tool_id: 't' }) },
    });

    expect(
      await added(
        {
          unavailable: [RecallMetric.REQUESTS, { outcome: 'service_unavailable' }],
          unavailableLatency: [RecallMetric.DURATION, { outcome: 'service_unavailable' }],
          unsupported: [RecallMetric.REQUESTS, { outcome: 'unsupported_action_type' }],
          invalid: [RecallMetric.REQUESTS, { outcome: 'invalid_request' }],
          toolBox503: [
            RecallMetric.UPSTREAM_CALLS,
            { upstream: TOOL_BOX, outcome: 'status', 'http.response.status_code': 503 },
          ],
          ontologyOk: [RecallMetric.UPSTREAM_CALLS, { upstream: ONTOLOGY, outcome: 'ok' }],
        },
        async () => {
          expect(expectError(await askRecall(harness.client, unavailable.request)).status).toBe(502);
          expect(expectError(await askRecall(harness.client, mcp.request)).status).toBe(400);
          expect(expectError(await askRecall(harness.client, undefined, { raw: '{"kn_id": ' })).status).toBe(
            400,
          );
        },
      ),
    ).toEqual({
      unavailable: 1,
      unavailableLatency: 1,
      unsupported: 1,
      invalid: 1,
      // The tool detail is idempotent: the first attempt and every retry.
      toolBox503: UPSTREAM_RETRIES + 1,
      ontologyOk: 2,
    });
    await instance.stop();
  });
});
