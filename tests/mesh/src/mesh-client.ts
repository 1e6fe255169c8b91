/**
 * What an upstream or a person does with a running mesh, as small helpers for the end-to-end tests:
 * management calls, submissions, and reading a task's events over SSE or NATS.
 */
import type { TaskEvent, TaskStatusRecord } from '@agentmesh/protocol';
import { SseParser, type SseMessage } from '@agentmesh/sse';
import { waitFor } from '@agentmesh/testkit';
import { MESH_ACCOUNT, type Mesh } from './mesh-harness.js';

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

/** Stores `value` as the tenant's model key: user u1's credential `MODEL_KEY`, which {@link scriptedModel} names. */
export async function storeModelKey(mesh: Mesh, value = 'model-key'): Promise<void> {
  await admin(mesh, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/MODEL_KEY`, { value });
}

/** An agent's model: the scripted model server at `baseUrl`, its key read from the credential `MODEL_KEY`. */
export function scriptedModel(baseUrl: string): {
  model_name: string;
  base_url: string;
  api_key_credential: string;
} {
  return { model_name: 'scripted', base_url: baseUrl, api_key_credential: 'MODEL_KEY' };
}

/** Registers a tool that calls `GET <url>` with its one required parameter in the query. */
export async function registerQueryTool(
  mesh: Mesh,
  tool: { name: string; description: string; url: string; parameter: string; type: 'string' | 'number' },
): Promise<void> {
  await admin(mesh, 'POST', '/plugins', {
    schema_version: 'v1',
    name: tool.name,
    description: tool.description,
    parameters: {
      type: 'object',
      properties: { [tool.parameter]: { type: tool.type } },
      required: [tool.parameter],
    },
    execution: { method: 'GET', base_url: tool.url, param_placement: 'query' },
  });
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
