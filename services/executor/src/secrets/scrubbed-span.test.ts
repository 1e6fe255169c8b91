import { addSecretFilter, startTelemetry, type Telemetry } from '@agentmesh/runtime';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inSpan, markFailed } from '../gen-ai-spans.js';
import { OpenSecrets } from './open-secrets.js';
import { SecretScrubber } from './secret-scrubber.js';

const KEY = 'canary-span-secret/41c7+';
const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor({ exporter });
let telemetry: Telemetry;

beforeAll(() => {
  telemetry = startTelemetry({
    service: 'executor-test',
    env: {},
    spanProcessors: [processor],
  });
});

afterAll(async () => {
  await telemetry.shutdown();
});

it('when a span of the executor gets a secret in its status, attributes, events or a recorded exception, the exported span holds [REDACTED] instead', async () => {
  const open = new OpenSecrets();
  const remove = addSecretFilter((text) => open.scrub(text));
  const release = open.hold(new SecretScrubber([KEY]));
  try {
    await inSpan(
      `execute_tool ${KEY}`,
      { kind: SpanKind.INTERNAL, attributes: { 'agentmesh.note': `set at start ${KEY}` } },
      async (span) => {
        span.setAttribute('agentmesh.echo', encodeURIComponent(KEY));
        span.setAttributes({ 'agentmesh.list': [KEY.toUpperCase(), 'plain'] });
        span.addEvent('upstream answered', { body: JSON.stringify({ key: KEY }) });
        span.recordException(new Error(`upstream echoed ${Buffer.from(KEY).toString('base64')}`));
        markFailed(span, 'TOOL_ERROR', `the API said: bad key ${KEY}`);
      },
    );
  } finally {
    release();
    remove();
  }

  // Export waits for the SDK's resource detection; flushing waits for it.
  await processor.forceFlush();
  const [span] = exporter.getFinishedSpans();
  const exported = JSON.stringify({
    name: span?.name,
    attributes: span?.attributes,
    events: span?.events,
    status: span?.status,
  });
  for (const form of [
    KEY,
    encodeURIComponent(KEY),
    KEY.toUpperCase(),
    Buffer.from(KEY).toString('base64'),
    JSON.stringify(KEY).slice(1, -1),
  ]) {
    expect(exported).not.toContain(form);
  }
  expect(span?.status.message).toBe('the API said: bad key [REDACTED]');
  expect(span?.attributes['agentmesh.list']).toEqual(['[REDACTED]', 'plain']);
  expect(span?.events.map((event) => event.name)).toEqual(['upstream answered', 'exception']);
});
