// Seed 004 §6, every row: each failure is a NATS service error whose code is the seed's HTTP status and whose
// payload is the seed's error body {code, message, detail}; upstream failures carry the upstream's status and
// an excerpt of its answer; only the idempotent tool detail is retried.
import { findFreePort } from '@agentmesh/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  askRecall,
  expectError,
  expectTools,
  requestsTo,
  serveActions,
  serveTool,
  startHarness,
  uniqueIds,
  UPSTREAM_RETRIES,
  UPSTREAM_TIMEOUT_MS,
  type RecallHarness,
  type RecallInstance,
} from './__fixtures__/recall-harness.js';
import { seedActionQueryAnswer, seedExample, seedFixture } from './__fixtures__/seed-004.js';

let harness: RecallHarness;
let instance: RecallInstance;

beforeAll(async () => {
  harness = await startHarness();
  instance = await harness.startInstance();
});

afterAll(async () => {
  await harness?.stop();
});

/** A fresh object whose action query answers `actions` (default: a tool action) and whose tool answers `tool`. */
function scenario(
  label: string,
  replies: { actions?: Parameters<typeof serveActions>[3]; tool?: Parameters<typeof serveTool>[3] } = {},
  delays: { actions?: number; tool?: number } = {},
) {
  const ids = uniqueIds(label);
  const source = { type: 'tool', box_id: ids.boxId, tool_id: ids.toolId };
  const actionsPath = serveActions(
    harness.ontology,
    ids.knId,
    ids.atId,
    replies.actions ?? { body: seedActionQueryAnswer(source) },
    delays.actions,
  );
  const toolPath = serveTool(
    harness.toolBox,
    ids.boxId,
    ids.toolId,
    replies.tool ?? { body: seedExample('004-s3.1-response.json').toolDetail },
    delays.tool,
  );
  return {
    ids,
    request: { kn_id: ids.knId, at_id: ids.atId, unique_identity: { disease_id: `${label}-1` } },
    actionCalls: () => requestsTo(harness.ontology, actionsPath).length,
    toolCalls: () => requestsTo(harness.toolBox, toolPath).length,
  };
}

describe('action query failures → 502 SERVICE_UNAVAILABLE', () => {
  it('when ontology-query answers 503, the error carries its status and an excerpt, and the POST is not retried', async () => {
    const s = scenario('aq-503', {
      actions: { status: 503, body: { error: 'overloaded', hint: 'x'.repeat(2_000) } },
    });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'ontology-query', reason: 'status', status: 503, attempts: 1 },
    });
    const excerpt = (error.body.detail as { body_excerpt: string }).body_excerpt;
    expect(excerpt.startsWith('{"error":"overloaded"')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(512);
    expect(error.description).toBe(error.body.message);
    expect(s.actionCalls()).toBe(1);
    expect(s.toolCalls()).toBe(0);
  });

  it('when ontology-query does not answer in time, the error says timeout', async () => {
    const s = scenario('aq-timeout', {}, { actions: UPSTREAM_TIMEOUT_MS * 4 });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'ontology-query', reason: 'timeout' },
    });
    expect(s.actionCalls()).toBe(1);
  });

  it('when ontology-query answers malformed JSON, the error says so with the excerpt', async () => {
    const s = scenario('aq-malformed', {
      actions: { headers: { 'content-type': 'application/json' }, body: '{"actions": [' },
    });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { reason: 'malformed_json', status: 200, body_excerpt: '{"actions": [' },
    });
  });

  it('when ontology-query answers JSON that is not an action list, or actions without a tool source, the error says unexpected_shape', async () => {
    const notAList = scenario('aq-shape', { actions: { body: { actions: 'none' } } });
    expect(expectError(await askRecall(harness.client, notAList.request)).body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'ontology-query', reason: 'unexpected_shape' },
    });
    const noSource = scenario('aq-nosource', { actions: { body: { actions: [{ parameters: {} }] } } });
    expect(expectError(await askRecall(harness.client, noSource.request)).body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { reason: 'unexpected_shape' },
    });
    expect(noSource.toolCalls()).toBe(0);
  });
});

describe('tool detail failures → 502 SERVICE_UNAVAILABLE', () => {
  it('when the tool box keeps answering 500, the GET is retried UPSTREAM_RETRIES times, then the error carries the status', async () => {
    const s = scenario('td-500', { tool: { status: 500, body: 'tool box exploded' } });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: {
        upstream: 'agent-operator-integration',
        reason: 'status',
        status: 500,
        body_excerpt: 'tool box exploded',
        attempts: UPSTREAM_RETRIES + 1,
      },
    });
    expect(s.toolCalls()).toBe(UPSTREAM_RETRIES + 1);
  });

  it('when the tool box fails once with 503 and then answers, the retry succeeds and the caller gets the tool', async () => {
    let calls = 0;
    const { toolDetail } = seedExample('004-s3.1-response.json');
    const s = scenario('td-flaky', {
      tool: () => (++calls === 1 ? { status: 503, body: 'busy' } : { body: toolDetail }),
    });
    const body = expectTools(await askRecall(harness.client, s.request));
    expect(body._dynamic_tools.map((tool) => tool.name)).toEqual([toolDetail.name]);
    expect(s.toolCalls()).toBe(2);
  });

  it('when the tool box answers 404, it is not retried (a client error will not heal)', async () => {
    const s = scenario('td-404', { tool: { status: 404, body: { message: 'no such tool' } } });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.body).toMatchObject({ code: 'SERVICE_UNAVAILABLE', detail: { status: 404, attempts: 1 } });
    expect(s.toolCalls()).toBe(1);
  });

  it('when the tool box answers malformed JSON or something that is not a tool, the error says what', async () => {
    const malformed = scenario('td-malformed', {
      tool: { headers: { 'content-type': 'application/json' }, body: '<html>' },
    });
    expect(expectError(await askRecall(harness.client, malformed.request)).body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'agent-operator-integration', reason: 'malformed_json', body_excerpt: '<html>' },
    });
    const notATool = scenario('td-shape', { tool: { body: { description: 'no name, no api_spec' } } });
    expect(expectError(await askRecall(harness.client, notATool.request)).body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { reason: 'unexpected_shape' },
    });
  });

  it('when the tool box does not answer in time, every attempt times out and the error says timeout', async () => {
    const s = scenario('td-timeout', {}, { tool: UPSTREAM_TIMEOUT_MS * 4 });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.body).toMatchObject({ detail: { reason: 'timeout', attempts: UPSTREAM_RETRIES + 1 } });
  });
});

describe('connection refused → 502 SERVICE_UNAVAILABLE', () => {
  let unreachable: RecallInstance | undefined;
  afterAll(async () => {
    await unreachable?.stop();
  });

  it('when nothing listens at ontology-query’s address, the error says connection', async () => {
    // Alone in the queue group, so that this instance answers.
    await instance.stop();
    const closedPort = await findFreePort();
    unreachable = await harness.startInstance({ ONTOLOGY_QUERY_URL: `http://127.0.0.1:${closedPort}` });
    const s = scenario('refused');
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'ontology-query', reason: 'connection' },
    });
    expect((error.body.detail as { status?: number }).status).toBeUndefined();
    await unreachable.stop();
    instance = await harness.startInstance();
  });
});

describe('the other rows of seed §6', () => {
  it('when the action source is mcp without a server and tool name (the seed’s example), the answer is 400 UNSUPPORTED_ACTION_TYPE with the seed’s error body, and no tool is fetched', async () => {
    const seedBody = seedFixture<{ code: string; detail: { action_source: object } }>(
      '004-s6.2-error-body.json',
    );
    const s = scenario('mcp', { actions: { body: { actions: [{ parameters: {} }], ...seedBody.detail } } });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(400);
    expect(error.body).toEqual({
      code: seedBody.code,
      message: 'an mcp action source names its mcp_server and tool_name',
      detail: seedBody.detail,
    });
    expect(s.toolCalls()).toBe(0);
  });

  it('when the action source is of another type, the answer is 400 UNSUPPORTED_ACTION_TYPE', async () => {
    const source = { type: 'grpc', box_id: 'b', tool_id: 't' };
    const s = scenario('grpc', {
      actions: { body: { actions: [{ parameters: {} }], action_source: source } },
    });
    const error = expectError(await askRecall(harness.client, s.request));
    expect(error.status).toBe(400);
    expect(error.body).toEqual({
      code: 'UNSUPPORTED_ACTION_TYPE',
      message: 'only action sources of type=tool or type=mcp are supported',
      detail: { action_source: source },
    });
  });

  it('when the object has no actions, the answer is 200 with an empty _dynamic_tools, and no tool is fetched', async () => {
    const s = scenario('empty', { actions: { body: { actions: [] } } });
    expect(expectTools(await askRecall(harness.client, s.request))).toEqual({ _dynamic_tools: [] });
    expect(s.toolCalls()).toBe(0);
  });

  it('when unique_identity is malformed, the answer is 400 INVALID_REQUEST naming the field, and no upstream is called', async () => {
    const s = scenario('bad-identity');
    for (const identity of [{ disease_id: null }, {}, 'disease_000001', { disease_id: { nested: 1 } }]) {
      const error = expectError(await askRecall(harness.client, { ...s.request, unique_identity: identity }));
      expect(error.status).toBe(400);
      expect(error.body.code).toBe('INVALID_REQUEST');
      expect(error.body.message).toMatch(/^unique_identity/);
    }
    const both = expectError(
      await askRecall(harness.client, { ...s.request, unique_identities: [{ disease_id: 'd2' }] }),
    );
    expect(both.body.message).toMatch(/either unique_identity or unique_identities/);
    expect(s.actionCalls()).toBe(0);
  });

  it.each([
    ['kn_id', '..'],
    ['kn_id', '.'],
    ['at_id', '%2e%2E'],
    ['at_id', '.%2e'],
  ])(
    'when %s is %j, the answer is 400 INVALID_REQUEST naming it, and ontology-query gets no request at all',
    async (field, value) => {
      const s = scenario(`dot-${field}`);
      const before = harness.ontology.requests.length;

      const error = expectError(await askRecall(harness.client, { ...s.request, [field]: value }));

      expect(error.status).toBe(400);
      expect(error.body).toMatchObject({
        code: 'INVALID_REQUEST',
        message: `${field}: must not be "." or ".." (it would change the upstream request path)`,
        detail: { issues: [{ path: field }] },
      });
      expect(harness.ontology.requests.length).toBe(before);
    },
  );

  it('when the action source names its tool "..", the answer is 502 unexpected_shape and the tool box gets no request', async () => {
    const ids = uniqueIds('dot-tool');
    const source = { type: 'tool', box_id: ids.boxId, tool_id: '..' };
    serveActions(harness.ontology, ids.knId, ids.atId, { body: seedActionQueryAnswer(source) });
    const before = harness.toolBox.requests.length;

    const error = expectError(
      await askRecall(harness.client, {
        kn_id: ids.knId,
        at_id: ids.atId,
        unique_identity: { disease_id: 'dot-tool-1' },
      }),
    );

    expect(error.status).toBe(502);
    expect(error.body).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      detail: { upstream: 'ontology-query', reason: 'unexpected_shape' },
    });
    expect(error.body.message).toContain('"." or ".."');
    expect(harness.toolBox.requests.length).toBe(before);
  });

  it('when an account header is missing, the answer is 400 INVALID_REQUEST naming it, and no upstream is called', async () => {
    const s = scenario('no-account');
    const noType = expectError(await askRecall(harness.client, s.request, { account: { id: 'acct' } }));
    expect(noType.status).toBe(400);
    expect(noType.body).toEqual({
      code: 'INVALID_REQUEST',
      message: 'the x-account-type header is required',
      detail: { missing_headers: ['x-account-type'] },
    });
    // Account fields in the body do not stand in for the headers.
    const inBodyOnly = expectError(
      await askRecall(
        harness.client,
        { ...s.request, account_id: 'acct', account_type: 'user' },
        { account: null },
      ),
    );
    expect(inBodyOnly.body.detail).toEqual({ missing_headers: ['x-account-id', 'x-account-type'] });
    expect(s.actionCalls()).toBe(0);
  });

  it('when the body is not JSON, the answer is 400 INVALID_REQUEST', async () => {
    const error = expectError(await askRecall(harness.client, undefined, { raw: '{"kn_id": ' }));
    expect(error.body).toMatchObject({
      code: 'INVALID_REQUEST',
      message: 'the request body is not valid UTF-8 JSON',
    });
  });

  it('when the tool’s api_spec cannot be converted, the answer is 500 SCHEMA_CONVERSION_ERROR and the log names the tool', async () => {
    const twoOperations = {
      openapi: '3.0.3',
      paths: { '/a': { get: { responses: {} } }, '/b': { get: { responses: {} } } },
    };
    for (const apiSpec of [twoOperations, 'not an operation']) {
      const s = scenario('conversion', {
        tool: { body: { name: 'broken_tool', description: '', api_spec: apiSpec } },
      });
      const error = expectError(await askRecall(harness.client, s.request));
      expect(error.status).toBe(500);
      expect(error.body).toEqual({
        code: 'SCHEMA_CONVERSION_ERROR',
        message: 'the tool definition could not be converted into a function schema',
        detail: { box_id: s.ids.boxId, tool_id: s.ids.toolId },
      });
      expect(instance.logs).toContainEqual(
        expect.objectContaining({
          level: 'error',
          msg: 'tool schema conversion failed',
          box_id: s.ids.boxId,
          tool_id: s.ids.toolId,
        }),
      );
    }
  });

  it('when the same request fails upstream, the failure is not cached: the next request asks again', async () => {
    let calls = 0;
    const s = scenario('no-negative-cache', {
      actions: () => (++calls === 1 ? { status: 502, body: 'gateway' } : { body: { actions: [] } }),
    });
    expectError(await askRecall(harness.client, s.request));
    expect(expectTools(await askRecall(harness.client, s.request))).toEqual({ _dynamic_tools: [] });
    expect(s.actionCalls()).toBe(2);
  });
});
