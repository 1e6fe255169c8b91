/**
 * What an upstream or a person does with a running mesh, as small helpers for the end-to-end tests:
 * management calls, submissions, and reading a task's events over SSE or NATS.
 */
import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import { SseParser, type SseMessage } from '@agentmesh/sse';
import { waitFor } from '@agentmesh/testkit';
import type { Mesh } from './mesh-harness.js';

export async function admin(mesh: Mesh, method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/admin${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.adminKey}`,
      ...(body ? { 'content-type': 'application/json' } : {}),
    },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  if (!response.ok) throw new Error(`${method} ${path} → ${response.status} ${await response.text()}`);
  return response;
}

export async function submit(
  mesh: Mesh,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${mesh.gatewayUrl}/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** A task's status record, as `GET /v1/tasks/{id}` answers it to the mesh's tenant. */
export async function taskStatus(mesh: Mesh, traceId: string): Promise<TaskStatusRecord> {
  const response = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}`, {
    headers: { authorization: `Bearer ${mesh.apiKey}` },
  });
  return (await response.json()) as TaskStatusRecord;
}

/** Reads an SSE response to its end (the gateway closes it after the terminal event). */
export async function readSse(response: Response): Promise<SseMessage[]> {
  const parser = new SseParser();
  return [...parser.push(await response.text()), ...parser.end()];
}

/**
 * A task's events over SSE, read to the end. `SERVICE_UNAVAILABLE` (the gateway could not read the task's
 * status, e.g. just after NATS restarted) says "retry", so it is asked again, for up to 30 s.
 */
export async function sseEvents(mesh: Mesh, traceId: string, lastEventId?: number): Promise<TaskEvent[]> {
  const response = await waitFor(
    async () => {
      const answer = await fetch(`${mesh.gatewayUrl}/v1/tasks/${traceId}/events`, {
        headers: {
          authorization: `Bearer ${mesh.apiKey}`,
          accept: 'text/event-stream',
          ...(lastEventId !== undefined ? { 'last-event-id': String(lastEventId) } : {}),
        },
      });
      if (answer.status === 200) return answer;
      const text = await answer.text();
      if (text.includes('"SERVICE_UNAVAILABLE"')) return undefined;
      throw new Error(`SSE → ${answer.status} ${text}`);
    },
    { timeoutMs: 30_000, intervalMs: 200, description: `the event stream of ${traceId}` },
  );
  return (await readSse(response)).map((message) => JSON.parse(message.data) as TaskEvent);
}

export const eventTypes = (events: readonly TaskEvent[]): string[] => events.map((event) => event.type);

export function expectStrictlyIncreasing(events: readonly TaskEvent[]): boolean {
  return events.every((event, index) => index === 0 || event.seq > events[index - 1]!.seq);
}
