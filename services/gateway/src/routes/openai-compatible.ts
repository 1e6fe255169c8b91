/**
 * The OpenAI-compatible façade, so any OpenAI client can call an agent: `POST /v1/chat/completions`
 * (`model` = the agent's workflow id; streamed as `chat.completion.chunk`s or answered as one
 * `chat.completion`), `GET /v1/models` and `GET /v1/models/:model` (the agents the caller may run).
 *
 * A completion is a task submitted through the same path as `POST /v1/tasks` (auth, rate limits,
 * running-task caps, idempotency, trace id) and followed through the same follower as the task's SSE
 * endpoint, so it holds an event-stream slot while it waits. A client that goes away before the task
 * ends cancels it, as `POST /v1/tasks/:trace_id/cancel` would. Every error, Fastify's own included, is
 * answered in OpenAI's shape (`openai/openai-errors.ts`); a task's `error` event in the middle of a
 * stream is one `data: {"error": ...}` chunk, and the stream ends.
 */
import { accountScope, type AgentStore, type ScopedAgent, type TaskStatusStore } from '@agentmesh/bus';
import { httpStatusOf, type TaskEvent } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { JetStreamClient } from '@nats-io/jetstream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InternalFailure, Rejection, ShuttingDown } from '../errors.js';
import { eventStreamCaller, type EventStreamSlots } from '../event-stream-slots.js';
import type { LiveEventFeed } from '../live-event-feed.js';
import { agentModel } from '../openai/agent-models.js';
import {
  agentsUnavailable,
  openAiCallerOf,
  resolveAgentModel,
  sendOpenAiRefusal,
} from '../openai/openai-caller.js';
import {
  completionIdentity,
  CompletionCollector,
  eventChunks,
  finishingChunks,
  openingChunk,
  type CompletionIdentity,
} from '../openai/chat-completion-answer.js';
import { StreamedText } from '../openai/streamed-text.js';
import { parseChatCompletionRequest, type ChatCompletionTask } from '../openai/chat-completion-request.js';
import { frameworkRefusal, openAiErrorBody, OpenAiRefusal, refusalOf } from '../openai/openai-errors.js';
import { followTaskEventObjects } from '../task-event-objects.js';
import { writeSseStream } from '../sse-stream.js';
import type { TaskCanceller } from '../task-cancellation.js';
import type { TaskSubmitter } from '../task-submission.js';
import type { AuthenticateRequest } from './request-caller.js';

export interface OpenAiRouteDeps {
  authenticate: AuthenticateRequest;
  submitter: TaskSubmitter;
  canceller: TaskCanceller;
  agents: AgentStore;
  statuses: TaskStatusStore;
  js: JetStreamClient;
  liveEvents: LiveEventFeed | undefined;
  slots: EventStreamSlots;
  heartbeatMs: number;
  /** Aborted when the gateway stops: open completions end (their tasks go on). */
  shutdown: AbortSignal;
  log: Logger;
  now?: () => Date;
}

/** Names the task behind every answer, so it can be looked up or cancelled through the task API. */
const TRACE_HEADER = 'x-agentmesh-trace-id';
const DONE_FRAME = 'data: [DONE]\n\n';
const CLIENT_GONE_REASON = 'the chat completion client went away';

const dataFrame = (payload: unknown): string => `data: ${JSON.stringify(payload)}\n\n`;

const sendRefusal = sendOpenAiRefusal;
const accountOf = (deps: OpenAiRouteDeps, request: FastifyRequest) =>
  openAiCallerOf(deps.authenticate, request);
const resolveAgent = (deps: OpenAiRouteDeps, accountId: string, model: string) =>
  resolveAgentModel(deps.agents, accountId, model);

export function registerOpenAiRoutes(app: FastifyInstance, deps: OpenAiRouteDeps): void {
  // Its own scope, for an error handler that answers Fastify's failures in OpenAI's shape too.
  void app.register(async (openai) => {
    openai.setErrorHandler((error, request, reply) => {
      const refusal = frameworkRefusal(error);
      if (refusal) return sendRefusal(reply, refusal);
      deps.log.error(
        { err: error, method: request.method, route: request.routeOptions.url },
        'request failed',
      );
      return sendRefusal(reply, refusalOf(new InternalFailure({ cause: error })));
    });

    openai.get('/v1/models', async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof OpenAiRefusal) return sendRefusal(reply, target);
      let visible: ScopedAgent[];
      try {
        visible = await deps.agents.listVisible(accountScope(target.accountId));
      } catch (error) {
        return sendRefusal(reply, refusalOf(agentsUnavailable(error)));
      }
      return reply.send({
        object: 'list',
        data: visible.map((scoped) => agentModel(scoped, target.accountId)),
      });
    });

    openai.get<{ Params: { model: string } }>('/v1/models/:model', async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof OpenAiRefusal) return sendRefusal(reply, target);
      const found = await resolveAgent(deps, target.accountId, request.params.model);
      if (found instanceof OpenAiRefusal) return sendRefusal(reply, found);
      return reply.send(agentModel(found, target.accountId));
    });

    openai.post('/v1/chat/completions', async (request, reply) => {
      const target = await accountOf(deps, request);
      if (target instanceof OpenAiRefusal) return sendRefusal(reply, target);
      const task = parseChatCompletionRequest(request.body);
      if (task instanceof OpenAiRefusal) return sendRefusal(reply, task);
      const agent = await resolveAgent(deps, target.accountId, task.workflowId);
      if (agent instanceof OpenAiRefusal) return sendRefusal(reply, agent);
      // Taken before submitting: a completion refused for want of a slot leaves no task behind.
      const slot = deps.slots.take(eventStreamCaller(target.caller, target.accountId));
      if (slot instanceof Rejection) return sendRefusal(reply, refusalOf(slot));
      try {
        const accepted = await deps.submitter.submit(task.submission, target.caller);
        if (accepted instanceof Rejection) return sendRefusal(reply, refusalOf(accepted));
        const completion = new RunningCompletion(deps, reply, {
          accountId: target.accountId,
          traceId: accepted.reply.trace_id,
          task,
        });
        return await completion.answer();
      } finally {
        slot.release();
      }
    });
  });
}

interface CompletionTarget {
  accountId: string;
  traceId: string;
  task: ChatCompletionTask;
}

/** One accepted completion: follows its task to the end and answers, or cancels it if the client leaves. */
class RunningCompletion {
  private readonly identity: CompletionIdentity;
  private readonly clientGone = new AbortController();
  private terminal: TaskEvent | undefined;

  constructor(
    private readonly deps: OpenAiRouteDeps,
    private readonly reply: FastifyReply,
    private readonly target: CompletionTarget,
  ) {
    this.identity = completionIdentity(
      target.traceId,
      target.task.workflowId,
      (deps.now ?? (() => new Date()))(),
    );
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) this.clientGone.abort();
    });
    // The client may have left while the task was being submitted.
    if (reply.raw.socket === null || reply.raw.socket.destroyed) this.clientGone.abort();
  }

  async answer(): Promise<FastifyReply | undefined> {
    try {
      return this.target.task.stream ? await this.stream() : await this.complete();
    } finally {
      if (this.terminal === undefined && this.clientGone.signal.aborted) await this.cancelTask();
      this.deps.log.info(
        {
          trace_id: this.target.traceId,
          stream: this.target.task.stream,
          outcome: this.terminal?.type ?? (this.clientGone.signal.aborted ? 'client_gone' : 'stopped'),
        },
        'chat completion ended',
      );
    }
  }

  private events(): AsyncGenerator<TaskEvent> {
    const { deps, target } = this;
    return followTaskEventObjects({
      js: deps.js,
      feed: deps.liveEvents,
      accountId: target.accountId,
      traceId: target.traceId,
      afterSeq: 0,
      signal: AbortSignal.any([this.clientGone.signal, deps.shutdown]),
      statuses: deps.statuses,
    });
  }

  /** Non-streamed: one `chat.completion`, or the task's error with its code's status. */
  private async complete(): Promise<FastifyReply | undefined> {
    const collector = new CompletionCollector(this.identity, this.target.traceId);
    try {
      for await (const event of this.events()) {
        if (event.type === 'done' || event.type === 'error') {
          this.terminal = event;
          break;
        }
        collector.add(event);
      }
    } catch (error) {
      return this.failed(error);
    }
    const reply = this.reply.header(TRACE_HEADER, this.target.traceId);
    if (this.terminal?.type === 'done') return reply.send(collector.completion(this.terminal));
    if (this.terminal?.type === 'error') {
      return reply.code(httpStatusOf(this.terminal.data.code)).send(openAiErrorBody(this.terminal.data));
    }
    // No answer for a client that left (its connection is gone); a stopping gateway says so (the task
    // goes on).
    if (this.clientGone.signal.aborted) return this.abandoned();
    return sendRefusal(reply, refusalOf(new ShuttingDown()));
  }

  /** Streamed: chunks as the task's events come, then `[DONE]`, or an error chunk and the end. */
  private async stream(): Promise<undefined> {
    const { reply } = this;
    reply.hijack();
    reply.raw.setHeader(TRACE_HEADER, this.target.traceId);
    try {
      await writeSseStream(reply.raw, this.frames(), {
        heartbeatMs: this.deps.heartbeatMs,
        signal: this.clientGone.signal,
      });
    } catch (error) {
      if (!this.clientGone.signal.aborted) {
        this.deps.log.error({ err: error, trace_id: this.target.traceId }, 'chat completion stream failed');
      }
    }
    if (this.deps.shutdown.aborted) reply.raw.socket?.destroySoon();
    return undefined;
  }

  private async *frames(): AsyncGenerator<string> {
    const { identity } = this;
    yield dataFrame(openingChunk(identity, this.target.traceId));
    const text = new StreamedText(identity);
    try {
      for await (const event of this.events()) {
        if (event.type === 'done') {
          this.terminal = event;
          for (const settling of text.settle()) yield dataFrame(settling);
          for (const finishing of finishingChunks(identity, event, this.target.task.includeUsage)) {
            yield dataFrame(finishing);
          }
          yield DONE_FRAME;
          return;
        }
        if (event.type === 'error') {
          this.terminal = event;
          yield dataFrame(openAiErrorBody(event.data));
          return;
        }
        for (const piece of text.chunks(event) ?? eventChunks(identity, event)) yield dataFrame(piece);
      }
    } catch (error) {
      this.deps.log.error({ err: error, trace_id: this.target.traceId }, 'chat completion events failed');
      yield dataFrame(refusalOf(new InternalFailure({ cause: error })).toBody());
      return;
    }
    if (!this.clientGone.signal.aborted) yield dataFrame(refusalOf(new ShuttingDown()).toBody());
  }

  private abandoned(): undefined {
    this.reply.hijack();
    return undefined;
  }

  private failed(error: unknown): FastifyReply | undefined {
    if (this.clientGone.signal.aborted) return this.abandoned();
    this.deps.log.error({ err: error, trace_id: this.target.traceId }, 'chat completion events failed');
    return sendRefusal(
      this.reply.header(TRACE_HEADER, this.target.traceId),
      refusalOf(new InternalFailure({ cause: error })),
    );
  }

  private async cancelTask(): Promise<void> {
    const outcome = await this.deps.canceller
      .cancel(this.target.traceId, this.target.accountId, CLIENT_GONE_REASON)
      .catch((error: unknown) => error);
    if (outcome instanceof Rejection || outcome instanceof Error) {
      this.deps.log.info(
        { trace_id: this.target.traceId, err: outcome },
        'chat completion task not cancelled',
      );
    } else {
      this.deps.log.info(
        { trace_id: this.target.traceId },
        'chat completion client went away: task cancelled',
      );
    }
  }
}
