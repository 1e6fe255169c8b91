// Native tools on real NATS: provider announcements in `mesh_native_providers` (carrying the definitions the
// assembler mirrors), and `recall_actions` against a recall stand-in answering on `mesh.recall.actions`.
import { openNativeProvidersBucket } from '@agentmesh/bus';
import { Buckets, NativeProviderAnnouncement, newTraceId } from '@agentmesh/protocol';
import { startTelemetry, taskRootContext, type Telemetry } from '@agentmesh/runtime';
import {
  startNats,
  startRecallStandIn,
  waitFor,
  type NatsServer,
  type RecallStandIn,
} from '@agentmesh/testkit';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { context } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { appendixDynamicTool, recallAnswer } from '../../__fixtures__/recall-answers.js';
import { toolSuccess, type TaskAccount } from '../index.js';
import {
  defineNativeTool,
  NativeProviderAnnouncer,
  nativeToolProviders,
  recallActionsTool,
} from './index.js';

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let providers: KV;
let telemetry: Telemetry;

beforeAll(async () => {
  // Registers the W3C propagator and the context manager, as a running service has them.
  telemetry = startTelemetry({ service: 'executor-test', env: {} });
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  providers = await openNativeProvidersBucket(js, { ttlMs: 60_000 });
});

afterAll(async () => {
  await nc?.drain();
  await nats?.stop();
  await telemetry?.shutdown();
});

const nativeTool = (className: string, name = className.toLowerCase()) =>
  defineNativeTool({
    name,
    description: `the ${className}`,
    className,
    input: z.object({ zone: z.string().default('UTC') }),
    run: async () => toolSuccess('12:00'),
  }).definition;

describe('native tool providers in mesh_native_providers', () => {
  it('an executor announces its classes while it runs and withdraws them when it stops; two instances of one id are told apart', async () => {
    const onError = (error: unknown) => {
      throw error;
    };
    const a = await NativeProviderAnnouncer.start(providers, {
      executorId: 'executor-1',
      tools: [nativeTool('RecallActionsTool'), nativeTool('ExecuteScriptTool')],
      ttlMs: 60_000,
      onError,
    });
    const b = await NativeProviderAnnouncer.start(providers, {
      executorId: 'executor-1',
      tools: [nativeTool('RecallActionsTool')],
      ttlMs: 60_000,
      onError,
    });

    expect(await nativeToolProviders(providers, 'RecallActionsTool')).toEqual(['executor-1', 'executor-1']);
    expect(await nativeToolProviders(providers, 'ExecuteScriptTool')).toEqual(['executor-1']);
    expect(await nativeToolProviders(providers, 'DeepSearchTool')).toEqual([]);
    expect(await nativeToolProviders(providers, '>')).toEqual([]);
    // Each announcement carries the definitions of its class's tools, for the assembler to mirror.
    const [key] = a.keys;
    const announced = NativeProviderAnnouncement.parse((await providers.get(key!))?.json());
    expect(announced.tools).toEqual([nativeTool('RecallActionsTool')]);

    await a.stop();
    expect(await nativeToolProviders(providers, 'ExecuteScriptTool')).toEqual([]);
    expect(await nativeToolProviders(providers, 'RecallActionsTool')).toEqual(['executor-1']);
    await b.stop();
    expect(await nativeToolProviders(providers, 'RecallActionsTool')).toEqual([]);
  });

  it('an announcement that is not renewed expires after the bucket TTL', async () => {
    // A bucket of its own with a short TTL, written once by hand: what a crashed executor leaves.
    const shortLived = await new Kvm(js).create('test_native_providers_ttl', { history: 1, ttl: 1_000 });
    await shortLived.put('ClockTool.crashed_1', new TextEncoder().encode('{"executor_id":"crashed"}'));
    expect(await nativeToolProviders(shortLived, 'ClockTool')).toEqual(['crashed']);

    await waitFor(async () => (await nativeToolProviders(shortLived, 'ClockTool')).length === 0, {
      // The server expires by a timer of its own; a loaded machine runs it late (over 30 s once, in a CI
      // run beside the whole mesh suite), so the wait takes most of the test's 60 s.
      timeoutMs: 55_000,
      description: 'the stale announcement to expire',
    });
  });

  it("the bucket is the protocol's mesh_native_providers, with the TTL it was created with", async () => {
    expect(await providers.status()).toMatchObject({ bucket: Buckets.NATIVE_PROVIDERS, ttl: 60_000 });
  });
});

describe('recall_actions', () => {
  let recall: RecallStandIn | undefined;
  const input = {
    kn_id: 'kn_medical',
    at_id: 'generate_treatment_plan',
    unique_identity: { disease_id: 'd1' },
  };
  const ctx = (account: TaskAccount = { id: 'acme', type: 'org' }) => ({
    callId: 'call_1',
    signal: new AbortController().signal,
    account,
  });

  beforeEach(async () => {
    await recall?.stop();
    recall = undefined;
  });
  afterAll(async () => {
    await recall?.stop();
  });

  it("asks recall with the task's account headers and trace context, and answers its _dynamic_tools", async () => {
    const tool = appendixDynamicTool('http://127.0.0.1:9/proxy');
    recall = await startRecallStandIn(nc, () => ({ body: recallAnswer(tool) }));
    const traceId = newTraceId();
    const outcome = await context.with(taskRootContext(traceId), () =>
      recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx()),
    );

    expect(outcome).toMatchObject({
      ok: true,
      result: { _dynamic_tools: [{ name: 'query_object_instances' }] },
    });
    expect(recall.requests).toEqual([
      {
        body: input,
        headers: expect.objectContaining({
          'x-account-id': 'acme',
          'x-account-type': 'org',
          traceparent: expect.stringContaining(traceId),
        }),
      },
    ]);
  });

  it('when several identities are given, recall is asked about all of them in one request, and the union of tools and each identity’s failure reach the model', async () => {
    const tool = appendixDynamicTool('http://127.0.0.1:9/proxy');
    const failure = {
      index: 1,
      unique_identity: { disease_id: 'd2' },
      code: 'SERVICE_UNAVAILABLE',
      message: 'ontology-query: answered 503',
    };
    recall = await startRecallStandIn(nc, () => ({ body: { ...recallAnswer(tool), failures: [failure] } }));
    const several = {
      kn_id: 'kn_medical',
      at_id: 'generate_treatment_plan',
      unique_identities: [{ disease_id: 'd1' }, { disease_id: 'd2' }],
    };
    const outcome = await recallActionsTool({ nc, timeoutMs: 5_000 }).run(several, ctx());

    expect(recall.requests.map((request) => request.body)).toEqual([several]);
    expect(outcome).toMatchObject({
      ok: true,
      result: { _dynamic_tools: [{ name: 'query_object_instances' }], failures: [failure] },
    });
  });

  it('when both identity forms or neither are given, the call is refused before recall is asked', async () => {
    recall = await startRecallStandIn(nc, () => ({ body: recallAnswer() }));
    const tool = recallActionsTool({ nc, timeoutMs: 5_000 });
    const both = await tool.run({ ...input, unique_identities: [{ disease_id: 'd2' }] }, ctx());
    const neither = await tool.run({ kn_id: 'kn', at_id: 'at' }, ctx());
    for (const outcome of [both, neither]) {
      expect(outcome).toMatchObject({
        ok: false,
        error: {
          code: 'INVALID_REQUEST',
          message: expect.stringContaining('either unique_identity or unique_identities'),
        },
      });
    }
    expect(recall.requests).toEqual([]);
  });

  it('a task without an account type is asked about as seed 004\'s "user"', async () => {
    recall = await startRecallStandIn(nc, () => ({ body: recallAnswer() }));
    await recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx({ id: 'acme' }));

    expect(recall.requests[0]!.headers).toMatchObject({ 'x-account-type': 'user' });
  });

  it("recall's refusal reaches the model with the seed's code, message and status", async () => {
    recall = await startRecallStandIn(nc, () => ({
      error: {
        status: 400,
        body: {
          code: 'UNSUPPORTED_ACTION_TYPE',
          message: 'only action sources of type=tool are supported',
          detail: { action_source: { type: 'mcp' } },
        },
      },
    }));
    const outcome = await recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx());

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'UNSUPPORTED_ACTION_TYPE',
        message: 'recall refused: only action sources of type=tool are supported',
        detail: { status: 400, detail: { action_source: { type: 'mcp' } } },
      },
    });
  });

  it('an upstream failure recall reports stays SERVICE_UNAVAILABLE', async () => {
    recall = await startRecallStandIn(nc, () => ({
      error: { status: 502, body: { code: 'SERVICE_UNAVAILABLE', message: 'action query failed' } },
    }));
    const outcome = await recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx());

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'SERVICE_UNAVAILABLE', detail: { status: 502 } },
    });
  });

  it('with no recall service running, the model gets SERVICE_UNAVAILABLE saying so', async () => {
    const outcome = await recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx());

    expect(outcome).toEqual({
      ok: false,
      error: {
        code: 'SERVICE_UNAVAILABLE',
        message: 'the recall service is not running (no responder on the bus)',
      },
    });
  });

  it('a recall answer that is neither tools nor an error is SERVICE_UNAVAILABLE with an excerpt', async () => {
    recall = await startRecallStandIn(nc, () => ({ body: { hello: 'world' } }));
    const outcome = await recallActionsTool({ nc, timeoutMs: 5_000 }).run(input, ctx());

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'SERVICE_UNAVAILABLE', detail: { answer_excerpt: '{"hello":"world"}' } },
    });
  });

  it('a task cancelled while recall thinks ends the call at once with CANCELLED', async () => {
    // A responder that never answers.
    const silent = nc.subscribe('mesh.recall.actions');
    const abort = new AbortController();
    const call = recallActionsTool({ nc, timeoutMs: 30_000 }).run(input, { ...ctx(), signal: abort.signal });
    abort.abort();

    await expect(call).resolves.toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    silent.unsubscribe();
  });
});
