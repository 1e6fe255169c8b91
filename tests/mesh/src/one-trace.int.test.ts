/**
 * One OpenTelemetry trace follows every task: each service exports its spans over OTLP (HTTP/JSON) to
 * a recording server, and the spans of the gateway, the assembler and the executor for a task all
 * carry the task's trace_id as their trace id.
 */
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, sseEvents, storeModelKey, submit } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

interface OtlpSpan {
  traceId: string;
  name: string;
  attributes?: { key: string; value: Record<string, unknown> }[];
}
interface OtlpExport {
  resourceSpans?: {
    resource?: { attributes?: { key: string; value: { stringValue?: string } }[] };
    scopeSpans?: { spans?: OtlpSpan[] }[];
  }[];
}

let mesh: Mesh;
let collector: RecordingApi;
let model: ScriptedModel;
let api: RecordingApi;

beforeAll(async () => {
  collector = await startRecordingApi({
    routes: [{ method: 'POST', path: '/v1/traces', reply: { status: 200, body: {} } }],
  });
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/lookup', reply: { status: 200, body: { ok: true } } }],
  });
  model = await startScriptedModel({
    respond: (request) =>
      ((request.body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role === 'tool'
        ? { content: 'traced' }
        : { toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] },
  });
  mesh = await startMesh({
    common: {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '100',
    },
  });
  await storeModelKey(mesh, 'canary-trace-key-81');
  await registerQueryTool(mesh, {
    name: 'lookup',
    description: 'lookup',
    url: `${api.url}/lookup`,
    parameter: 'q',
    type: 'string',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'traced_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['lookup'],
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await Promise.all([collector?.stop(), api?.stop(), model?.stop()]);
});

function exportedSpans(): { service: string; span: OtlpSpan }[] {
  return collector.requests.flatMap((request) =>
    ((request.body as OtlpExport | undefined)?.resourceSpans ?? []).flatMap((resourceSpans) => {
      const service =
        resourceSpans.resource?.attributes?.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
      return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
        (scope.spans ?? []).map((span) => ({ service, span })),
      );
    }),
  );
}

it("the gateway's, the assembler's and the executor's spans of a task share the task's trace id", async () => {
  const response = await submit(mesh, {
    workflow_id: 'traced_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'trace me' }],
  });
  const { trace_id } = (await response.json()) as { trace_id: string };
  await sseEvents(mesh, trace_id);
  const services = await waitFor(
    () => {
      const found = new Set(
        exportedSpans()
          .filter(({ span }) => span.traceId === trace_id)
          .map(({ service }) => service),
      );
      return ['gateway', 'assembler', 'executor'].every((s) => found.has(s)) ? found : undefined;
    },
    { timeoutMs: 20_000 },
  );
  expect([...services].sort()).toEqual(expect.arrayContaining(['assembler', 'executor', 'gateway']));
  const names = exportedSpans()
    .filter(({ span }) => span.traceId === trace_id)
    .map(({ span }) => span.name);
  expect(names.some((name) => name.startsWith('chat'))).toBe(true);
  expect(names.some((name) => name.startsWith('execute_tool'))).toBe(true);
  // The model and tool spans carry GenAI attributes, and no span carries the model key.
  expect(JSON.stringify(collector.requests.map((r) => r.bodyText))).not.toContain('canary-trace-key-81');
  const chat = exportedSpans().find(({ span }) => span.traceId === trace_id && span.name.startsWith('chat'))!;
  expect(chat.span.attributes?.map((a) => a.key)).toEqual(
    expect.arrayContaining(['gen_ai.operation.name', 'gen_ai.request.model']),
  );
});
