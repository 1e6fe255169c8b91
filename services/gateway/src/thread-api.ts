/**
 * The threads API, the same over HTTP (`routes/threads.ts`) and NATS (`mesh.gateway.threads.<account>`,
 * queue group `gateway`, where the account is the subject's): create, list (newest first, paged), read
 * (record, entries and the history the next run sees) and delete a thread of the caller's account. A read
 * also repairs a stale claim: an active run whose task has ended is released (and the next queued run
 * promoted), so a lost release never wedges a thread. A read gives only what the thread's retention keeps and
 * purges the rest from the stream (the gateway may purge MESH_THREADS; assemblers only read it).
 */
import { randomBytes } from 'node:crypto';
import {
  CreateThreadRequest,
  parseThreadApiSubject,
  THREAD_API_PREFIX,
  ThreadApiRequest,
  threadHistory,
  type ThreadListReply,
  type ThreadRetention,
  type ThreadReply,
  type ThreadSummary,
} from '@agentmesh/protocol';
import {
  encodeJson,
  runEndedByStatus,
  threadSummary,
  type TaskStatusStore,
  type ThreadStore,
} from '@agentmesh/bus';
import type { Logger } from '@agentmesh/runtime';
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import {
  Conflict,
  InternalFailure,
  InvalidRequest,
  NotFound,
  PayloadTooLarge,
  Rejection,
  ServiceUnavailable,
} from './errors.js';
import { parseJsonBody } from './json-body.js';
import { GATEWAY_QUEUE_GROUP } from './nats-ingress.js';

export const DEFAULT_THREAD_PAGE = 50;

export class ThreadApi {
  constructor(
    private readonly threads: ThreadStore,
    private readonly statuses: TaskStatusStore,
    private readonly log: Logger,
    /** Given to a thread of the account created without a retention (account or deployment default); none when empty. */
    private readonly defaultRetention: (accountId: string) => Partial<ThreadRetention> = () => ({}),
  ) {}

  async create(accountId: string, body: unknown): Promise<ThreadSummary | Rejection> {
    const parsed = CreateThreadRequest.safeParse(body ?? {});
    if (!parsed.success) return InvalidRequest.fromZod(parsed.error);
    const threadId = parsed.data.thread_id ?? `th_${randomBytes(12).toString('hex')}`;
    const fallback = this.defaultRetention(accountId);
    const retention =
      parsed.data.retention ??
      (fallback.max_age_seconds === undefined && fallback.max_turns === undefined ? undefined : fallback);
    const request = { ...parsed.data, ...(retention === undefined ? {} : { retention }) };
    const created = await this.bus(() => this.threads.create(accountId, threadId, request));
    if (created instanceof Rejection) return created;
    if (created === undefined) return new Conflict(`thread ${threadId} exists already`);
    this.log.info({ account_id: accountId, thread_id: threadId }, 'thread created');
    return threadSummary(created);
  }

  async list(
    accountId: string,
    limit = DEFAULT_THREAD_PAGE,
    before?: string,
  ): Promise<ThreadListReply | Rejection> {
    const page = await this.bus(() => this.threads.list(accountId, limit, before));
    if (page instanceof Rejection) return page;
    return {
      threads: page.threads.map(threadSummary),
      ...(page.next_before === undefined ? {} : { next_before: page.next_before }),
    };
  }

  async get(accountId: string, threadId: string): Promise<ThreadReply | Rejection> {
    return this.bus(async () => {
      let found = await this.threads.get(accountId, threadId);
      if (found === undefined) return new NotFound(`no thread ${threadId} in this account`);
      const active = found.record.active;
      if (active !== undefined && (await runEndedByStatus(this.statuses)(accountId, active.trace_id))) {
        await this.threads.release(accountId, threadId, active.trace_id);
        found = (await this.threads.get(accountId, threadId)) ?? found;
      }
      const entries = await this.threads.retained(accountId, threadId, found.record);
      const purged = await this.threads.purgeExpired(accountId, threadId, found.record);
      if (purged > 0) {
        this.log.debug(
          { account_id: accountId, thread_id: threadId, purged },
          'thread entries past retention purged',
        );
      }
      return {
        ...threadSummary(found.record),
        runs: found.record.runs,
        entries,
        messages: threadHistory(entries),
      };
    });
  }

  async delete(accountId: string, threadId: string): Promise<{ deleted: true } | Rejection> {
    const deleted = await this.bus(() => this.threads.delete(accountId, threadId));
    if (deleted instanceof Rejection) return deleted;
    if (!deleted) return new NotFound(`no thread ${threadId} in this account`);
    this.log.info({ account_id: accountId, thread_id: threadId }, 'thread deleted');
    return { deleted: true };
  }

  /** One NATS request (ThreadApiRequest), answered with the reply or an ErrorBody. */
  async request(accountId: string, body: unknown): Promise<unknown> {
    const parsed = ThreadApiRequest.safeParse(body);
    if (!parsed.success) return InvalidRequest.fromZod(parsed.error);
    const op = parsed.data;
    switch (op.op) {
      case 'create':
        return this.create(accountId, op.body);
      case 'list':
        return this.list(accountId, op.limit, op.before);
      case 'get':
        return this.get(accountId, op.thread_id);
      case 'delete':
        return this.delete(accountId, op.thread_id);
    }
  }

  private async bus<T>(call: () => Promise<T>): Promise<T | ServiceUnavailable> {
    try {
      return await call();
    } catch (error) {
      this.log.error({ err: error }, 'threads unavailable');
      return new ServiceUnavailable('threads are unavailable right now; retry', { cause: error });
    }
  }
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Serves `mesh.gateway.threads.<account>`; stop() drains it. */
export function startThreadNatsApi(options: {
  nc: NatsConnection;
  api: ThreadApi;
  bodyLimitBytes: number;
  log: Logger;
}): { stop(): Promise<void> } {
  const inFlight = new Set<Promise<void>>();
  const subscription: Subscription = options.nc.subscribe(`${THREAD_API_PREFIX}.*`, {
    queue: GATEWAY_QUEUE_GROUP,
    callback: (error, msg) => {
      if (error) {
        options.log.error({ err: error }, 'threads subscription failed');
        return;
      }
      const handling = answer(options, msg).finally(() => inFlight.delete(handling));
      inFlight.add(handling);
    },
  });
  return {
    async stop() {
      await subscription.drain();
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function answer(
  options: { api: ThreadApi; bodyLimitBytes: number; log: Logger },
  msg: Msg,
): Promise<void> {
  // Only an inbox may be answered (see nats-ingress.ts: a reply subject is not permission-checked).
  if (!msg.reply || !msg.reply.startsWith('_INBOX')) return;
  let outcome: unknown;
  try {
    outcome = await handle(options, msg);
  } catch (error) {
    options.log.error({ err: error }, 'threads request over NATS failed');
    outcome = new InternalFailure({ cause: error });
  }
  try {
    msg.respond(encodeJson(outcome instanceof Rejection ? outcome.toBody() : outcome));
  } catch (error) {
    options.log.warn({ err: error }, 'reply to a threads request failed');
  }
}

async function handle(options: { api: ThreadApi; bodyLimitBytes: number }, msg: Msg): Promise<unknown> {
  const target = parseThreadApiSubject(msg.subject);
  if (target === undefined) return new InvalidRequest('not a threads subject');
  if (msg.data.length > options.bodyLimitBytes) return new PayloadTooLarge(options.bodyLimitBytes);
  let text: string;
  try {
    text = decoder.decode(msg.data);
  } catch {
    return new InvalidRequest('the request body is not valid UTF-8');
  }
  const body = parseJsonBody(text);
  if (body instanceof Rejection) return body;
  return options.api.request(target.accountId, body.value);
}
