/**
 * A thread's history for a task that runs in it (`task_meta.thread`): the thread's turns since its last
 * compaction (and that compaction's summary), put between the agent's system prompt and the task's new
 * messages, so the history is part of the input the vault is bound to. `task_meta.thread` then says how
 * many messages are history and at which thread sequence it was read (the executor's append fence).
 *
 * Compaction: when the thread's `compaction.max_history_tokens` is set and history plus new input is
 * estimated (characters/4) above it, the oldest turns go: `cut` keeps the newest turns that fit (at most
 * `keep_turns`); `summarise` also asks the agent's model (or `summary_model`) for a summary of what goes,
 * and falls back to the cut when the summariser fails, times out or answers something that does not fit
 * either. Whole turns go, so a tool call is never parted from its result. The compaction is appended to
 * the thread (once per task, however often it is assembled), so every later run sees the same history.
 *
 * Retention: entries the thread's `retention` no longer keeps (older than its age, before its last turns)
 * are not history, whether or not the gateway has purged them yet.
 */
import {
  agentModels,
  estimateTokens,
  threadHistory,
  type AgentDefinition,
  type ChatMessage,
  type ReceivedTask,
  type StoredThreadEntry,
  type ThreadCompactionEntry,
  type ThreadRecord,
} from '@agentmesh/protocol';
import type { ThreadStore } from '@agentmesh/bus';
import type { OutboundGuard } from '@agentmesh/runtime/outbound-guard';
import { ThreadNotFoundError, type AssemblyError } from './assembly-errors.js';

/** Writes a summary of `messages`; throws when it cannot. */
export type Summariser = (
  messages: readonly ChatMessage[],
  model: { base_url: string; model_name: string; api_key?: string },
  maxTokens: number,
) => Promise<string>;

const SUMMARY_TIMEOUT_MS = 30_000;
/** More than any summary that fits a window; a larger answer is refused rather than read into memory. */
const MAX_SUMMARY_ANSWER_BYTES = 1024 * 1024;

/**
 * The OpenAI-compatible summariser: one chat completion with the agent's endpoint and key. The endpoint is
 * agent data and the request carries the model key, so it goes through the same SSRF guard as the
 * executors' model calls (scheme, IP literal and metadata host before sending; every resolved address in
 * the connection's own lookup), with the assembler's MODEL_ALLOW_HOSTS. Redirects are not followed.
 */
export function chatCompletionSummariser(guard: OutboundGuard): Summariser {
  const agent = guard.createAgent({ keepAliveTimeout: 10_000 });
  return async (messages, model, maxTokens) => {
    const url = new URL(
      'chat/completions',
      model.base_url.endsWith('/') ? model.base_url : `${model.base_url}/`,
    );
    guard.checkUrl(url);
    const transcript = messages
      .map(
        (message) =>
          `${message.role}: ${typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? '')}`,
      )
      .join('\n');
    const response = await agent.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(model.api_key === undefined ? {} : { authorization: `Bearer ${model.api_key}` }),
      },
      body: JSON.stringify({
        model: model.model_name,
        max_tokens: maxTokens,
        messages: [
          {
            role: 'system',
            content:
              'Summarise the conversation below for its continuation: keep facts, decisions, names and open questions. Answer with the summary only.',
          },
          // Never more than the window allows: a summariser that overflows would fail every time.
          { role: 'user', content: transcript.slice(-maxTokens * 16) },
        ],
      }),
      signal: AbortSignal.timeout(SUMMARY_TIMEOUT_MS),
    });
    if (response.statusCode < 200 || response.statusCode >= 300) {
      await response.body.dump();
      throw new Error(`the summariser answered HTTP ${response.statusCode}`);
    }
    const body = JSON.parse(await boundedText(response.body, MAX_SUMMARY_ANSWER_BYTES)) as {
      choices?: { message?: { content?: unknown } }[];
    };
    const text = body.choices?.[0]?.message?.content;
    if (typeof text !== 'string' || text.trim() === '') throw new Error('the summariser answered no text');
    return text.trim();
  };
}

async function boundedText(body: AsyncIterable<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new Error(`the summariser answered more than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

export interface ThreadHistorySource {
  /** The task with its thread's history in front of its messages, or why it cannot run. */
  withHistory(
    received: ReceivedTask,
    agent: AgentDefinition,
    modelKey: string | undefined,
  ): Promise<{ ok: true; task: ReceivedTask } | { ok: false; failure: AssemblyError }>;
}

export class ThreadHistoryLoader implements ThreadHistorySource {
  constructor(
    private readonly threads: ThreadStore,
    private readonly summarise: Summariser,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async withHistory(
    received: ReceivedTask,
    agent: AgentDefinition,
    modelKey: string | undefined,
  ): Promise<{ ok: true; task: ReceivedTask } | { ok: false; failure: AssemblyError }> {
    const link = received.task_meta.thread;
    if (link === undefined) return { ok: true, task: received };
    const accountId = received.task_meta.account_id;
    const found = await this.threads.get(accountId, link.thread_id);
    if (found === undefined) return { ok: false, failure: new ThreadNotFoundError(link.thread_id) };
    // Only what the thread's retention keeps is history (the gateway purges the rest when it reads).
    let entries = await this.threads.retained(accountId, link.thread_id, found.record);
    const compaction = await this.compaction(found.record, entries, received, agent, modelKey);
    if (compaction !== undefined) {
      const after = entries.at(-1)?.seq ?? (await this.threads.lastSeq(accountId, link.thread_id));
      await this.threads.append(
        accountId,
        link.thread_id,
        compaction,
        `compaction.${received.task_meta.trace_id}`,
        after,
        (stored) => stored.type === 'compaction' && stored.trace_id === received.task_meta.trace_id,
      );
      entries = await this.threads.retained(accountId, link.thread_id, found.record);
    }
    const history = threadHistory(entries);
    const baseSeq = entries.at(-1)?.seq ?? (await this.threads.lastSeq(accountId, link.thread_id));
    return {
      ok: true,
      task: {
        ...received,
        task_meta: {
          ...received.task_meta,
          thread: {
            thread_id: link.thread_id,
            history_messages: history.length,
            new_messages: received.input.messages.length,
            base_seq: baseSeq,
          },
        },
        input: { ...received.input, messages: [...history, ...received.input.messages] },
      },
    };
  }

  /** The compaction this task's history needs, or undefined when it fits (or has no limit). */
  private async compaction(
    record: ThreadRecord,
    entries: readonly StoredThreadEntry[],
    received: ReceivedTask,
    agent: AgentDefinition,
    modelKey: string | undefined,
  ): Promise<ThreadCompactionEntry | undefined> {
    const policy = record.compaction;
    const limit = policy?.max_history_tokens;
    if (policy === undefined || limit === undefined) return undefined;
    const history = threadHistory(entries);
    const input = estimateTokens(received.input.messages);
    if (estimateTokens(history) + input <= limit) return undefined;

    // The turns the current history holds, newest first; keep those that fit, at most keep_turns.
    let from = 0;
    for (const { entry } of entries) if (entry.type === 'compaction') from = entry.keep_from_seq;
    const turns = entries.filter((stored) => stored.entry.type === 'turn' && stored.seq >= from);
    const budget = Math.max(0, limit - input);
    let keptTokens = 0;
    let keepFrom = (entries.at(-1)?.seq ?? 0) + 1;
    let kept = 0;
    for (const stored of [...turns].reverse()) {
      if (stored.entry.type !== 'turn' || kept >= policy.keep_turns) break;
      const cost = estimateTokens(stored.entry.messages);
      if (keptTokens + cost > budget) break;
      keptTokens += cost;
      keepFrom = stored.seq;
      kept++;
    }
    // Nothing to drop (the history is the new input's only): no entry, the run goes on as it is.
    if (!turns.some((stored) => stored.seq < keepFrom)) return undefined;
    const base = {
      type: 'compaction' as const,
      keep_from_seq: keepFrom,
      at: this.now().toISOString(),
      trace_id: received.task_meta.trace_id,
    };
    if (policy.policy === 'cut') return { ...base, method: 'cut' };

    const dropped = threadHistory(entries.filter((stored) => stored.seq < keepFrom));
    const room = budget - keptTokens;
    // The summary is asked of the agent's first model (the one whose key the assembler passes in).
    const [model] = agentModels(agent);
    try {
      if (room < 16) throw new Error('no room for a summary in the window');
      if (model === undefined) throw new Error('the agent names no model');
      const summary = await this.summarise(
        dropped,
        {
          base_url: model.base_url,
          model_name: policy.summary_model ?? model.model_name,
          ...(modelKey === undefined ? {} : { api_key: modelKey }),
        },
        room,
      );
      if (estimateTokens([{ role: 'system', content: summary }]) > room) {
        throw new Error('the summary does not fit the window');
      }
      return { ...base, method: 'summary', summary };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return { ...base, method: 'cut', fallback_reason: reason.slice(0, 500) };
    }
  }
}
