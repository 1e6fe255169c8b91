// Threads: conversations stored on the bus, per account. A thread's entries (its turns, and compaction
// entries) are messages of stream MESH_THREADS on `mesh.threads.<account>.<thread_id>`, in order; its
// metadata, strategy and active run are one record in KV `mesh_threads` (`<account>.<thread_id>`), changed
// by compare-and-set only, so two gateways or executors never both claim a thread. A task submitted with
// `thread_id` runs with the thread's history (loaded by the assembler, bound into the task's vault) and its
// turn is appended once, by the executor, before its terminal event.
import { z } from 'zod';
import { ChatMessage } from './chat.js';
import { IsoDateTime } from './ids.js';
import { AccountId, InvalidSubjectTokenError, isAccountId } from './names.js';
import { DEFAULT_THREAD_STRATEGY, isThreadId, ThreadId, ThreadStrategy } from './thread-id.js';
import { ReceivedTask } from './task.js';
import { TraceId } from './trace-id.js';
import { JsonObject } from './tools/json-schema.js';

/**
 * How a thread's history is kept inside the model's window: once the history is estimated (characters/4)
 * above `max_history_tokens`, `cut` keeps the newest turns that fit (at least `keep_turns` if they fit,
 * never half a tool call), `summarise` replaces the older turns with a summary written by the agent's
 * model (or `summary_model`), falling back to `cut` when that fails.
 */
export const ThreadCompaction = z.strictObject({
  max_history_tokens: z.int().min(1).max(10_000_000).optional(),
  policy: z.enum(['cut', 'summarise']).default('cut'),
  keep_turns: z.int().min(1).max(1000).default(4),
  /** Model name for summaries; the agent's own when absent (same endpoint and key). */
  summary_model: z.string().min(1).max(256).optional(),
});
export type ThreadCompaction = z.infer<typeof ThreadCompaction>;

/** How long the MESH_THREADS stream keeps an entry at most (its max age): no thread keeps one longer. */
export const THREAD_STREAM_MAX_AGE_SECONDS = 30 * 24 * 60 * 60;

/**
 * How much of a thread's history is kept: entries older than `max_age_seconds` (by their `at`) and turns
 * before the last `max_turns` are neither given to a run nor listed, and the gateway purges them from the
 * stream. A thread without it keeps what MESH_THREADS keeps (30 days, 10 000 entries).
 */
export const ThreadRetention = z
  .strictObject({
    max_age_seconds: z.int().min(1).max(THREAD_STREAM_MAX_AGE_SECONDS).optional(),
    max_turns: z.int().min(1).max(10_000).optional(),
  })
  .refine((value) => value.max_age_seconds !== undefined || value.max_turns !== undefined, {
    message: 'retention needs max_age_seconds, max_turns or both',
  });
export type ThreadRetention = z.infer<typeof ThreadRetention>;

/** One run's contribution: the user input, the assistant's tool calls and their results, the answer. */
export const ThreadTurnEntry = z.strictObject({
  type: z.literal('turn'),
  trace_id: TraceId,
  messages: z.array(ChatMessage).min(1),
  at: IsoDateTime,
  /** The run was interrupted by a newer message: the turn holds what it finished, no final answer. */
  interrupted: z.boolean().optional(),
});
export type ThreadTurnEntry = z.infer<typeof ThreadTurnEntry>;

/**
 * Replaces every entry before `keep_from_seq` (stream sequence) in the history every later run sees:
 * by `summary` (a system message) when the summariser answered, by nothing when it was a plain cut.
 */
export const ThreadCompactionEntry = z.strictObject({
  type: z.literal('compaction'),
  keep_from_seq: z.int().nonnegative(),
  method: z.enum(['summary', 'cut']),
  summary: z.string().optional(),
  /** Why a summary was not used (the summariser's error), for a `cut` that was meant to summarise. */
  fallback_reason: z.string().max(500).optional(),
  at: IsoDateTime,
  /** The task whose assembly compacted the thread. */
  trace_id: TraceId.optional(),
});
export type ThreadCompactionEntry = z.infer<typeof ThreadCompactionEntry>;

export const ThreadEntry = z.discriminatedUnion('type', [ThreadTurnEntry, ThreadCompactionEntry]);
export type ThreadEntry = z.infer<typeof ThreadEntry>;

/** A run of the thread: the active one, or one waiting its turn (the gateway's ReceivedTask, unpublished). */
export const ThreadRun = z.strictObject({
  trace_id: TraceId,
  since: IsoDateTime,
  /** Set on the active run when a newer message interrupts it: what its cancelled end keeps. */
  cancel_mode: z.enum(['interrupt', 'rollback']).optional(),
  /** A queued run's task, published by whoever promotes it (and kept until then). */
  task: ReceivedTask.optional(),
});
export type ThreadRun = z.infer<typeof ThreadRun>;

/** KV `mesh_threads`, key `<account>.<thread_id>`. */
export const ThreadRecord = z.object({
  thread_id: ThreadId,
  account_id: AccountId,
  created_at: IsoDateTime,
  updated_at: IsoDateTime,
  metadata: JsonObject.default({}),
  strategy: ThreadStrategy.default(DEFAULT_THREAD_STRATEGY),
  compaction: ThreadCompaction.optional(),
  retention: ThreadRetention.optional(),
  active: ThreadRun.optional(),
  queue: z.array(ThreadRun).default([]),
  /** Every run's trace id, oldest first (the last 1000): what following the thread follows. */
  runs: z.array(TraceId).default([]),
});
export type ThreadRecord = z.infer<typeof ThreadRecord>;

/** How many trace ids a thread record remembers. */
export const THREAD_RUNS_KEPT = 1000;

/** `POST /v1/threads`. */
export const CreateThreadRequest = z.strictObject({
  thread_id: ThreadId.optional(),
  metadata: JsonObject.optional(),
  strategy: ThreadStrategy.optional(),
  compaction: ThreadCompaction.optional(),
  /** The gateway's default (THREAD_DEFAULT_MAX_AGE_SECONDS, THREAD_DEFAULT_MAX_TURNS) when absent. */
  retention: ThreadRetention.optional(),
});
export type CreateThreadRequest = z.infer<typeof CreateThreadRequest>;

/** What callers see of a thread (its queue's tasks are left out). */
export const ThreadSummary = z.object({
  thread_id: ThreadId,
  created_at: IsoDateTime,
  updated_at: IsoDateTime,
  metadata: JsonObject,
  strategy: ThreadStrategy,
  compaction: ThreadCompaction.optional(),
  retention: ThreadRetention.optional(),
  status: z.enum(['idle', 'running']),
  active_trace_id: TraceId.optional(),
  queued_trace_ids: z.array(TraceId),
});
export type ThreadSummary = z.infer<typeof ThreadSummary>;

/** One stored entry with its place in the thread stream. */
export const StoredThreadEntry = z.object({ seq: z.int().nonnegative(), entry: ThreadEntry });
export type StoredThreadEntry = z.infer<typeof StoredThreadEntry>;

/** `GET /v1/threads/{id}`: the thread, its entries, and the history a new run would see. */
export const ThreadReply = ThreadSummary.extend({
  /** Every run's trace id, oldest first (the last 1000). */
  runs: z.array(TraceId),
  entries: z.array(StoredThreadEntry),
  /** The messages the next run sees (after compaction), oldest first. */
  messages: z.array(ChatMessage),
});
export type ThreadReply = z.infer<typeof ThreadReply>;

/** `GET /v1/threads?limit=&before=`: newest first. */
export const ThreadListReply = z.object({
  threads: z.array(ThreadSummary),
  /** Pass as `before` for the next page; absent on the last one. */
  next_before: z.string().optional(),
});
export type ThreadListReply = z.infer<typeof ThreadListReply>;

/**
 * The NATS request/reply door of threads (`mesh.gateway.threads.<account>`): the account is the subject's.
 * `op` names what `GET|POST|DELETE /v1/threads...` does over HTTP.
 */
export const ThreadApiRequest = z.discriminatedUnion('op', [
  z.strictObject({ op: z.literal('create'), body: CreateThreadRequest.default({}) }),
  z.strictObject({
    op: z.literal('list'),
    limit: z.int().min(1).max(200).optional(),
    before: z.string().max(200).optional(),
  }),
  z.strictObject({ op: z.literal('get'), thread_id: ThreadId }),
  z.strictObject({ op: z.literal('delete'), thread_id: ThreadId }),
]);
export type ThreadApiRequest = z.infer<typeof ThreadApiRequest>;

/** Prefix of the threads API subjects (`<prefix>.<account>`). */
export const THREAD_API_PREFIX = 'mesh.gateway.threads';

function account(value: string): string {
  if (!isAccountId(value)) throw new InvalidSubjectTokenError('account id', value);
  return value;
}

function thread(value: string): string {
  if (!isThreadId(value)) throw new InvalidSubjectTokenError('thread id', value);
  return value;
}

/** `mesh.threads.<account>.<thread_id>`: one thread's entries, in order (stream MESH_THREADS). */
export function threadEntriesSubject(accountId: string, threadId: string): string {
  return `mesh.threads.${account(accountId)}.${thread(threadId)}`;
}

/** `mesh.gateway.threads.<account>`: the NATS door of the threads API for one account. */
export function threadApiSubject(accountId: string): string {
  return `${THREAD_API_PREFIX}.${account(accountId)}`;
}

/** The account of a threads API subject, or undefined. */
export function parseThreadApiSubject(subject: string): { accountId: AccountId } | undefined {
  const [mesh, gateway, threads, accountId, ...rest] = subject.split('.');
  if (mesh !== 'mesh' || gateway !== 'gateway' || threads !== 'threads' || rest.length > 0) return undefined;
  return isAccountId(accountId) ? { accountId } : undefined;
}

/** Key of a thread in `mesh_threads` and its stream messages' id prefix. */
export function threadKey(accountId: string, threadId: string): string {
  return `${account(accountId)}.${thread(threadId)}`;
}

/** Estimated tokens of messages: characters / 4, rounded up (no tokenizer on the bus). */
export function estimateTokens(messages: readonly ChatMessage[]): number {
  let chars = 0;
  for (const message of messages) chars += JSON.stringify(message).length;
  return Math.ceil(chars / 4);
}

/**
 * The entries a thread's retention keeps (oldest first): from the first entry no older than
 * `max_age_seconds` at `now`, and from the first of the last `max_turns` turns, whichever is later. Only
 * the front goes, so the last kept entry is the thread's last.
 */
export function retainedEntries(
  entries: readonly StoredThreadEntry[],
  retention: ThreadRetention | undefined,
  now: Date,
): StoredThreadEntry[] {
  if (retention === undefined) return [...entries];
  let fromSeq = 0;
  if (retention.max_age_seconds !== undefined) {
    const cutoff = now.getTime() - retention.max_age_seconds * 1000;
    const young = entries.find((stored) => Date.parse(stored.entry.at) >= cutoff);
    fromSeq = young === undefined ? Number.POSITIVE_INFINITY : young.seq;
  }
  if (retention.max_turns !== undefined) {
    const turns = entries.filter((stored) => stored.entry.type === 'turn');
    const first = turns[turns.length - retention.max_turns];
    if (first !== undefined) fromSeq = Math.max(fromSeq, first.seq);
  }
  return entries.filter((stored) => stored.seq >= fromSeq);
}

/** The history a new run sees: the last compaction's summary (if any) and every turn after its cut. */
export function threadHistory(entries: readonly StoredThreadEntry[]): ChatMessage[] {
  let from = 0;
  let summary: string | undefined;
  for (const { entry } of entries) {
    if (entry.type === 'compaction') {
      from = entry.keep_from_seq;
      summary = entry.method === 'summary' ? entry.summary : undefined;
    }
  }
  const messages: ChatMessage[] =
    summary === undefined
      ? []
      : [{ role: 'system', content: `Summary of the earlier conversation:\n${summary}` }];
  for (const { seq, entry } of entries) {
    if (entry.type === 'turn' && seq >= from) messages.push(...entry.messages);
  }
  return messages;
}
