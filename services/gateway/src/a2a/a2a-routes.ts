/**
 * The A2A door's routes: Agent Cards (`/.well-known/agent-card.json`, the old `/.well-known/agent.json`,
 * and per agent `/a2a/{workflow_id}/.well-known/agent-card.json`) and each agent's JSON-RPC endpoint
 * `POST /a2a/{workflow_id}`, answering A2A 1.0's methods (`SendMessage`, `SendStreamingMessage`,
 * `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`, push-notification configs,
 * `GetExtendedAgentCard`) and 0.3's (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
 * `tasks/resubscribe`, `tasks/pushNotificationConfig/*`). The SDK's transport handlers parse and answer
 * the wire; which one answers is decided by the method name (0.3's have a slash), so a client that sends
 * no `A2A-Version` header is answered too.
 *
 * Every route takes the caller's bearer key (the gateway's authenticate): an unauthenticated request,
 * card or call, is a 401. Streams hold an event-stream slot like every other stream; a client that goes
 * away leaves its task running (resubscribe to pick it up again).
 */
import { AGENT_CARD_PATH, AgentCard } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, type A2ARequestHandler } from '@a2a-js/sdk/server';
import { LegacyJsonRpcTransportHandler } from '@a2a-js/sdk/compat/v0_3/server';
import { accountScope, type AgentStore, type ScopedAgent, type ToolStore } from '@agentmesh/bus';
import { WorkflowId } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { requireAccount, type Caller } from '../auth.js';
import { InternalFailure, NotFound, Rejection, ServiceUnavailable } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import { parseJsonBody } from '../json-body.js';
import type { AuthenticateRequest } from '../routes/request-caller.js';
import { SSE_HEADERS, SSE_HEARTBEAT } from '../sse-stream.js';
import { agentCard, catalogueCard } from './a2a-card.js';
import {
  jsonRpcErrorEnvelope,
  jsonRpcErrorOf,
  JsonRpcCode,
  MeshRefusal,
  type JsonRpcError,
} from './a2a-errors.js';
import { MeshA2aHandler, type A2aHandlerDeps } from './a2a-request-handler.js';

export interface A2aRouteDeps extends A2aHandlerDeps {
  authenticate: AuthenticateRequest;
  agents: AgentStore;
  tools: ToolStore;
  slots: EventStreamSlots;
  heartbeatMs: number;
  /** Aborted when the gateway stops: open streams end (their tasks go on). */
  shutdown: AbortSignal;
  /** PUBLIC_BASE_URL; the request's own origin when unset. */
  publicBaseUrl?: string;
  log: Logger;
}

const STREAMING_METHODS: ReadonlySet<string> = new Set([
  'SendStreamingMessage',
  'SubscribeToTask',
  'message/stream',
  'tasks/resubscribe',
]);
const CARD_PATHS = [`/${AGENT_CARD_PATH}`, '/.well-known/agent.json'];

type JsonRpcResponse = { jsonrpc: string; id: unknown; result?: unknown; error?: unknown };

export function registerA2aRoutes(app: FastifyInstance, deps: A2aRouteDeps): void {
  const baseUrl = (request: FastifyRequest): string =>
    deps.publicBaseUrl ?? `${request.protocol}://${request.host}`;

  for (const path of CARD_PATHS) {
    app.get<{ Querystring: { agent?: string; assistant_id?: string } }>(path, async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof Rejection) return refuse(reply, target);
      const wanted = request.query.agent ?? request.query.assistant_id;
      if (wanted !== undefined) {
        const found = await resolveAgent(deps, target.accountId, wanted);
        if (found instanceof Rejection) return refuse(reply, found);
        return reply.send(cardJson(await agentCard(found, target.accountId, deps.tools, baseUrl(request))));
      }
      let visible: ScopedAgent[];
      try {
        visible = await deps.agents.listVisible(accountScope(target.accountId));
      } catch (error) {
        return refuse(reply, agentsUnavailable(error));
      }
      return reply.send(cardJson(catalogueCard(visible, target.accountId, baseUrl(request))));
    });
    app.get<{ Params: { workflow_id: string } }>(`/a2a/:workflow_id${path}`, async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof Rejection) return refuse(reply, target);
      const found = await resolveAgent(deps, target.accountId, request.params.workflow_id);
      if (found instanceof Rejection) return refuse(reply, found);
      return reply.send(cardJson(await agentCard(found, target.accountId, deps.tools, baseUrl(request))));
    });
  }

  // Its own scope: bodies read as text (a body that is not JSON is a JSON-RPC parse error), and every
  // failure Fastify itself meets (a body too large, ...) answered as a JSON-RPC error.
  void app.register(async (rpc) => {
    rpc.removeAllContentTypeParsers();
    rpc.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    rpc.setErrorHandler((error: FastifyError, request, reply) => {
      const status = typeof error.statusCode === 'number' && error.statusCode >= 400 ? error.statusCode : 500;
      if (status >= 500)
        deps.log.error({ err: error, route: request.routeOptions.url }, 'a2a request failed');
      return reply.code(status).send(
        jsonRpcErrorEnvelope(null, {
          code: status === 413 ? JsonRpcCode.INVALID_REQUEST : JsonRpcCode.INTERNAL_ERROR,
          message: status >= 500 ? 'the request failed inside the gateway' : error.message,
        }),
      );
    });

    rpc.post<{ Params: { workflow_id: string } }>('/a2a/:workflow_id', async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof Rejection) return refuseRpc(reply, target);
      const agent = await resolveAgent(deps, target.accountId, request.params.workflow_id);
      if (agent instanceof Rejection) return refuseRpc(reply, agent);
      const parsed = typeof request.body === 'string' ? parseJsonBody(request.body) : undefined;
      if (parsed === undefined || parsed instanceof Rejection) {
        return reply.send(
          jsonRpcErrorEnvelope(null, {
            code: JsonRpcCode.PARSE_ERROR,
            message: `Parse error: ${parsed?.message ?? 'the request has no body'}`,
          }),
        );
      }
      const body = parsed.value;
      const id = isRecord(body) ? body.id : null;
      const method = isRecord(body) && typeof body.method === 'string' ? body.method : '';
      if (!isRecord(body)) {
        return reply.send(
          jsonRpcErrorEnvelope(null, {
            code: JsonRpcCode.INVALID_REQUEST,
            message: 'Invalid request: a JSON-RPC request is one object (batches are not taken)',
          }),
        );
      }

      const clientGone = new AbortController();
      reply.raw.once('close', () => clientGone.abort());
      const card = await agentCard(agent, target.accountId, deps.tools, baseUrl(request));
      let refusal: MeshRefusal | undefined;
      const handler = recordingRefusals(
        new MeshA2aHandler(deps, {
          caller: target.caller,
          accountId: target.accountId,
          workflowId: agent.agent.workflow_id,
          card,
          lastEventId: headerOf(request, 'last-event-id'),
          signal: AbortSignal.any([clientGone.signal, deps.shutdown]),
        }),
        (thrown) => (refusal = thrown),
      );
      const legacy = method.includes('/');
      const context = new ServerCallContext({ requestedVersion: legacy ? '0.3' : '1.0' });
      const streaming = STREAMING_METHODS.has(method);
      // A stream, or a blocking send that waits for the task, holds a slot like any event stream.
      const holds = streaming || method === 'SendMessage' || method === 'message/send';
      const slot = holds ? deps.slots.take(eventStreamCaller(target.caller, target.accountId)) : undefined;
      if (slot instanceof Rejection) {
        return reply.headers(slot.headers).send(jsonRpcErrorEnvelope(id, jsonRpcErrorOf(slot)));
      }
      try {
        const answer = legacy
          ? await new LegacyJsonRpcTransportHandler(handler).handle(body, context)
          : await new JsonRpcTransportHandler(handler).handle(body, context);
        if (!isAsyncIterable(answer)) {
          const response = answer as JsonRpcResponse;
          if (response.error !== undefined && refusal !== undefined) {
            return reply
              .headers(refusal.rejection.headers)
              .send(jsonRpcErrorEnvelope(response.id, jsonRpcErrorOf(refusal.rejection)));
          }
          return reply.send(response);
        }
        return await stream(deps, reply, answer, { id, legacy, signal: clientGone.signal });
      } finally {
        slot?.release();
      }
    });
  });
}

/**
 * Writes a JSON-RPC stream as SSE. The first response is awaited before anything is written, so a
 * stream refused at once (task not found, a rate limit) is one JSON-RPC error, not an event stream.
 * Each update's SSE `id:` is its cursor (what `Last-Event-ID` takes back).
 */
async function stream(
  deps: A2aRouteDeps,
  reply: FastifyReply,
  responses: AsyncIterable<JsonRpcResponse>,
  { id, legacy, signal }: { id: unknown; legacy: boolean; signal: AbortSignal },
): Promise<FastifyReply | undefined> {
  const iterator = responses[Symbol.asyncIterator]();
  let first: IteratorResult<JsonRpcResponse>;
  try {
    first = await iterator.next();
  } catch (error) {
    return reply.send(jsonRpcErrorEnvelope(id, streamError(deps, error, legacy)));
  }
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, SSE_HEADERS);
  raw.flushHeaders();
  const heartbeat = setInterval(() => {
    if (!raw.writableEnded) raw.write(SSE_HEARTBEAT);
  }, deps.heartbeatMs);
  const write = async (frame: string): Promise<void> => {
    heartbeat.refresh();
    if (!raw.write(frame)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          raw.off('drain', done);
          signal.removeEventListener('abort', done);
          resolve();
        };
        raw.once('drain', done);
        signal.addEventListener('abort', done, { once: true });
      });
    }
  };
  try {
    let next = first;
    while (next.done !== true && !signal.aborted) {
      await write(sseFrame(next.value));
      try {
        next = await iterator.next();
      } catch (error) {
        if (!signal.aborted)
          await write(
            `event: error\ndata: ${JSON.stringify(jsonRpcErrorEnvelope(id, streamError(deps, error, legacy)))}\n\n`,
          );
        break;
      }
    }
  } finally {
    clearInterval(heartbeat);
    await iterator.return?.(undefined);
    if (!raw.writableEnded) raw.end();
    if (deps.shutdown.aborted) raw.socket?.destroySoon();
  }
  return undefined;
}

function streamError(deps: A2aRouteDeps, error: unknown, legacy: boolean): JsonRpcError {
  if (error instanceof MeshRefusal) return jsonRpcErrorOf(error.rejection);
  if (error instanceof Rejection) return jsonRpcErrorOf(error);
  const mapped = legacy
    ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError(error)
    : JsonRpcTransportHandler.mapToJSONRPCError(error);
  if (mapped.code === JsonRpcCode.INTERNAL_ERROR) {
    deps.log.error({ err: error }, 'a2a stream failed');
    return jsonRpcErrorOf(new InternalFailure({ cause: error }));
  }
  return mapped;
}

/** `id:` the update's cursor (status and artifact updates carry one), `data:` the JSON-RPC response. */
function sseFrame(response: JsonRpcResponse): string {
  const cursor = cursorOf(response.result);
  return `${cursor === undefined ? '' : `id: ${cursor}\n`}data: ${JSON.stringify(response)}\n\n`;
}

function cursorOf(result: unknown): string | undefined {
  if (!isRecord(result)) return undefined;
  // 1.0 wraps the update (`{statusUpdate: {...}}`); 0.3 sends it bare.
  const update = [result.statusUpdate, result.artifactUpdate, result].find(
    (candidate) => isRecord(candidate) && isRecord(candidate.metadata),
  );
  const agentmesh = isRecord(update) && isRecord(update.metadata) ? update.metadata.agentmesh : undefined;
  return isRecord(agentmesh) &&
    typeof agentmesh.cursor === 'string' &&
    !('kind' in result && result.kind === 'task')
    ? agentmesh.cursor
    : undefined;
}

/** The handler, with the mesh refusals its answered methods throw seen before the SDK maps them. */
function recordingRefusals(handler: MeshA2aHandler, seen: (refusal: MeshRefusal) => void): A2ARequestHandler {
  return new Proxy(handler, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const result: unknown = value.apply(target, args);
        if (!(result instanceof Promise)) return result;
        return result.catch((error: unknown) => {
          if (error instanceof MeshRefusal) seen(error);
          throw error;
        });
      };
    },
  });
}

async function accountOf(
  deps: A2aRouteDeps,
  request: FastifyRequest,
): Promise<{ caller: Caller; accountId: string } | Rejection> {
  const caller = await deps.authenticate(request);
  if (caller instanceof Rejection) return caller;
  const account = requireAccount(caller);
  if (account instanceof Rejection) return account;
  return { caller, accountId: account.accountId };
}

async function resolveAgent(
  deps: A2aRouteDeps,
  accountId: string,
  workflowId: string,
): Promise<ScopedAgent | Rejection> {
  const notFound = new NotFound(`no agent ${workflowId} in this account`);
  if (!WorkflowId.safeParse(workflowId).success) return notFound;
  try {
    return (await deps.agents.resolve(accountScope(accountId), workflowId)) ?? notFound;
  } catch (error) {
    return agentsUnavailable(error);
  }
}

const agentsUnavailable = (cause: unknown): Rejection =>
  new ServiceUnavailable('agents cannot be read right now; retry', { cause });

const cardJson = (card: AgentCard): unknown => AgentCard.toJSON(card);

function refuse(reply: FastifyReply, rejection: Rejection): FastifyReply {
  return reply.code(rejection.httpStatus).headers(rejection.headers).send(rejection.toBody());
}

/** Refused before any JSON-RPC is read (no key, no such agent): the HTTP status, a JSON-RPC body. */
function refuseRpc(reply: FastifyReply, rejection: Rejection): FastifyReply {
  return reply
    .code(rejection.httpStatus)
    .headers(rejection.headers)
    .send(jsonRpcErrorEnvelope(null, jsonRpcErrorOf(rejection)));
}

const headerOf = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const isAsyncIterable = (value: unknown): value is AsyncIterable<JsonRpcResponse> =>
  typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
