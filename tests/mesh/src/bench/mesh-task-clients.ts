/**
 * The bench's two kinds of mesh client, each running one task from submission to its terminal event:
 * - SSE: `POST /v1/tasks`, then `GET /v1/tasks/{trace_id}/events` read with the SSE parser;
 * - NATS: a core subscription on the task's events subject (the trace id is chosen by the client so
 *   the subscription exists before the task does), then a request on `mesh.gateway.submit.<account>`.
 * Both fold the events into an {@link EventTally}, which turns an `error` event or a broken guarantee into
 * a failed task.
 */
import { performance } from 'node:perf_hooks';
import { newTraceId, type TaskEvent } from '@agentmesh/protocol';
import { SseParser, type SseMessage } from '@agentmesh/sse';
import type { NatsConnection } from '@nats-io/transport-node';
import { request } from 'undici';
import { EventTally, type TaskOutcome } from './event-tally.js';

export interface SseClientTarget {
  gatewayUrl: string;
  apiKey: string;
}

export async function runSseTask(
  target: SseClientTarget,
  body: Record<string, unknown>,
  expectedAnswer?: string,
): Promise<TaskOutcome> {
  const tally = new EventTally(performance.now(), expectedAnswer);
  const authorization = `Bearer ${target.apiKey}`;
  const submitted = await request(`${target.gatewayUrl}/v1/tasks`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const reply = await submitted.body.text();
  if (submitted.statusCode >= 300) throw new Error(`POST /v1/tasks → ${submitted.statusCode} ${reply}`);
  const { trace_id: traceId } = JSON.parse(reply) as { trace_id: string };

  const stream = await request(`${target.gatewayUrl}/v1/tasks/${traceId}/events`, {
    headers: { authorization, accept: 'text/event-stream' },
  });
  if (stream.statusCode !== 200) {
    throw new Error(`GET /v1/tasks/${traceId}/events → ${stream.statusCode} ${await stream.body.text()}`);
  }
  const parser = new SseParser();
  const decoder = new TextDecoder();
  const take = (message: SseMessage): void => tally.add(JSON.parse(message.data) as TaskEvent);
  // The gateway ends the response after the terminal event; reading to the end also shows any event
  // that would (wrongly) follow it.
  for await (const bytes of stream.body) {
    for (const message of parser.push(decoder.decode(bytes as Uint8Array, { stream: true }))) take(message);
  }
  for (const message of parser.end()) take(message);
  if (!tally.terminal)
    tally.outcome.failure ??= `the event stream of ${traceId} ended without a terminal event`;
  return tally.outcome;
}

export async function runNatsTask(
  nc: NatsConnection,
  accountId: string,
  body: Record<string, unknown>,
  expectedAnswer?: string,
  timeoutMs = 120_000,
): Promise<TaskOutcome> {
  const tally = new EventTally(performance.now(), expectedAnswer);
  const traceId = newTraceId();
  let finished!: () => void;
  const terminal = new Promise<void>((resolve) => (finished = resolve));
  const subscription = nc.subscribe(`mesh.events.${accountId}.${traceId}`, {
    callback: (error, msg) => {
      if (error) {
        tally.outcome.failure ??= `subscription failed: ${error.message}`;
        finished();
        return;
      }
      tally.add(msg.json<TaskEvent>());
      if (tally.terminal) finished();
    },
  });
  const timer = setTimeout(() => {
    tally.outcome.failure ??= `no terminal event of ${traceId} within ${timeoutMs} ms`;
    finished();
  }, timeoutMs);
  try {
    const reply = await nc.request(
      `mesh.gateway.submit.${accountId}`,
      JSON.stringify({ ...body, trace_id: traceId }),
      {
        timeout: 30_000,
      },
    );
    const answer = reply.json<{ trace_id?: string; code?: string; message?: string }>();
    if (answer.trace_id !== traceId) throw new Error(`submission over NATS refused: ${reply.string()}`);
    await terminal;
  } finally {
    clearTimeout(timer);
    subscription.unsubscribe();
  }
  return tally.outcome;
}
