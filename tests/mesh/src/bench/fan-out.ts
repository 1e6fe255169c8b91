/**
 * Fan-out (issue 27): many SSE followers of a few running tasks on one gateway. Submits `tasks` paced
 * tasks (each streams its answer for about seven seconds), then opens `followersPerTask` SSE streams on
 * each, spread over several API keys (a caller may keep only SSE_MAX_STREAMS_PER_CALLER streams), and
 * reads every stream to its end with the usual client checks. Reports the gateway's memory with every
 * follower open (against before), the JetStream consumers nats-server holds then (/jsz, against before),
 * and CPU per event delivered to a follower: the gateway's, and the whole mesh's.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TaskEvent } from '@agentmesh/protocol';
import { SseParser, type SseMessage } from '@agentmesh/sse';
import { request } from 'undici';
import { ProcessName, type CpuMeter } from './cpu-meter.js';
import { EventTally } from './event-tally.js';
import { readJetStreamConsumers, readRssBytes } from './mesh-probes.js';
import { median, round } from './stats.js';

export interface FanOutPlan {
  tasks: number;
  followersPerTask: number;
}

export interface FanOutResult {
  tasks: number;
  followers: number;
  /** Followers that read their stream to a clean end with the expected answer. */
  followers_ok: number;
  /** Followers refused, broken or ended without the terminal event. */
  followers_failed: number;
  api_keys: number;
  /** Followers open at once at most (as sampled every 250 ms). */
  max_open: number;
  events_delivered: number;
  /** Gateway RSS while all followers were open, MiB, and the growth over before per follower, KiB. */
  gateway_rss_mib: number | null;
  gateway_rss_kib_per_follower: number | null;
  /** JetStream consumers nats-server held at most while the followers were open, and before. */
  consumers_during: number;
  consumers_before: number;
  gateway_cpu_us_per_event: number | null;
  mesh_cpu_us_per_event: number | null;
  seconds: number;
}

export interface FanOutDeps {
  gatewayUrl: string;
  /** API keys of the account; followers are spread over them round-robin. */
  apiKeys: readonly string[];
  gatewayPid: number;
  meter: CpuMeter;
  natsMonitorUrl: string;
  /** The submission body of task `k`. */
  submission: (k: number) => Record<string, unknown>;
  expectedAnswer: string;
  report: (line: string) => void;
}

async function follow(
  gatewayUrl: string,
  apiKey: string,
  traceId: string,
  expectedAnswer: string,
  opened: () => void,
): Promise<{ events: number; failure?: string }> {
  const tally = new EventTally(performance.now(), expectedAnswer);
  const stream = await request(`${gatewayUrl}/v1/tasks/${traceId}/events`, {
    headers: { authorization: `Bearer ${apiKey}`, accept: 'text/event-stream' },
    bodyTimeout: 120_000,
  });
  if (stream.statusCode !== 200) {
    const body = await stream.body.text();
    return { events: 0, failure: `GET events → ${stream.statusCode} ${body.slice(0, 200)}` };
  }
  opened();
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const take = (message: SseMessage): void => tally.add(JSON.parse(message.data) as TaskEvent);
  for await (const bytes of stream.body) {
    for (const message of parser.push(decoder.decode(bytes as Uint8Array, { stream: true }))) take(message);
  }
  for (const message of parser.end()) take(message);
  if (!tally.terminal) tally.outcome.failure ??= 'the stream ended without a terminal event';
  return {
    events: tally.outcome.events,
    ...(tally.outcome.failure !== undefined ? { failure: tally.outcome.failure } : {}),
  };
}

export async function runFanOut(plan: FanOutPlan, deps: FanOutDeps): Promise<FanOutResult> {
  const followers = plan.tasks * plan.followersPerTask;
  await deps.meter.settle();
  const rssBefore = readRssBytes(deps.gatewayPid);
  const consumersBefore = await readJetStreamConsumers(deps.natsMonitorUrl);
  const cpuBefore = deps.meter.snapshot();
  const started = performance.now();

  const traceIds: string[] = [];
  for (let k = 0; k < plan.tasks; k++) {
    const apiKey = deps.apiKeys[k % deps.apiKeys.length]!;
    const submitted = await request(`${deps.gatewayUrl}/v1/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(deps.submission(k)),
    });
    const reply = await submitted.body.text();
    if (submitted.statusCode >= 300)
      throw new Error(`fan-out: POST /v1/tasks → ${submitted.statusCode} ${reply}`);
    traceIds.push((JSON.parse(reply) as { trace_id: string }).trace_id);
  }

  let open = 0;
  let maxOpen = 0;
  const samples: { rss: number; consumers: number }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      await sleep(250);
      // Memory and consumers while (nearly) every follower is open: a refused or early one must not
      // keep the sampler from ever reading.
      maxOpen = Math.max(maxOpen, open);
      if (open < followers * 0.9) continue;
      samples.push({
        rss: readRssBytes(deps.gatewayPid),
        consumers: await readJetStreamConsumers(deps.natsMonitorUrl).catch(() => 0),
      });
    }
  })();

  let n = 0;
  const results = await Promise.all(
    traceIds.flatMap((traceId) =>
      Array.from({ length: plan.followersPerTask }, () => {
        const apiKey = deps.apiKeys[n++ % deps.apiKeys.length]!;
        let counted = false;
        const opened = (): void => {
          if (!counted) open += 1;
          counted = true;
        };
        return follow(deps.gatewayUrl, apiKey, traceId, deps.expectedAnswer, opened)
          .catch((error: unknown) => ({ events: 0, failure: String(error) }))
          .finally(() => {
            if (counted) open -= 1;
          });
      }),
    ),
  );
  const seconds = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  await deps.meter.settle();
  const window = deps.meter.between(cpuBefore, deps.meter.snapshot());

  const failures = results.filter((result) => result.failure !== undefined);
  for (const failure of failures.slice(0, 3)) deps.report(`FAILED fan-out follower: ${failure.failure}`);
  if (failures.length > 3) deps.report(`… ${failures.length} fan-out followers FAILED in all`);
  const events = results.reduce((sum, result) => sum + result.events, 0);
  const meshMs = Object.entries(window.byProcess)
    .filter(([name]) => name !== ProcessName.bench && name !== ProcessName.mocks)
    .reduce((sum, [, ms]) => sum + (ms ?? 0), 0);
  const rssDuring = samples.length > 0 ? median(samples.map((s) => s.rss)) : undefined;
  return {
    tasks: plan.tasks,
    followers,
    followers_ok: followers - failures.length,
    followers_failed: failures.length,
    api_keys: deps.apiKeys.length,
    max_open: maxOpen,
    events_delivered: events,
    gateway_rss_mib: rssDuring === undefined ? null : round(rssDuring / 1024 / 1024),
    gateway_rss_kib_per_follower:
      rssDuring === undefined ? null : round((rssDuring - rssBefore) / 1024 / followers),
    consumers_during: samples.reduce((max, s) => Math.max(max, s.consumers), 0),
    consumers_before: consumersBefore,
    gateway_cpu_us_per_event:
      events > 0 && window.byProcess.gateway !== undefined
        ? round((window.byProcess.gateway * 1000) / events)
        : null,
    mesh_cpu_us_per_event: events > 0 ? round((meshMs * 1000) / events) : null,
    seconds: round(seconds),
  };
}

/** The fan-out result as a markdown table of one row. */
export function renderFanOut(result: FanOutResult): string {
  const cells = [
    `${result.tasks} × ${result.followers / Math.max(1, result.tasks)}`,
    String(result.followers),
    String(result.api_keys),
    result.followers_failed > 0 ? `⚠ ${result.followers_failed} FAILED` : '0',
    String(result.events_delivered),
    String(result.gateway_rss_mib ?? '—'),
    String(result.gateway_rss_kib_per_follower ?? '—'),
    `${result.consumers_during} (${result.consumers_before} before)`,
    String(result.gateway_cpu_us_per_event ?? '—'),
    String(result.mesh_cpu_us_per_event ?? '—'),
    String(result.seconds),
  ];
  return [
    '| tasks × followers | followers | API keys | failed | events delivered | gateway RSS MiB | gateway KiB / follower | JetStream consumers during | gateway µs CPU / event | mesh µs CPU / event | s |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    `| ${cells.join(' | ')} |`,
  ].join('\n');
}
