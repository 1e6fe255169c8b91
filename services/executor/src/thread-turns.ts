/**
 * What a task run in a thread (`task_meta.thread`) leaves there. Done: its turn — the new input, the
 * assistant's tool calls and their results, the answer — appended once (ThreadStore.appendTurn: message id
 * and fence, so a redelivery, a second attempt or a NATS restart never stores a copy) before the terminal
 * event. Cancelled because a newer message interrupted it (`cancel_mode: interrupt` on the thread): the turn
 * as it stood, marked `interrupted`, without the answer it was writing and without a tool call whose result
 * never came. Anything else (an error, a plain cancel, a rollback): nothing; a partial answer never becomes
 * history. Then, once the final status is written, the run frees the thread (ThreadStore.release) and
 * promotes the next queued run, which the gateways' ThreadPromoter publishes.
 */
import type { ThreadStore } from '@agentmesh/bus';
import { ErrorCode, type AssembledTask, type ChatMessage } from '@agentmesh/protocol';
import type { Logger } from '@agentmesh/runtime';
import type { LoopOutcome } from './agent-loop.js';

/** The messages of this run: the new input and what the loop added after it. */
function runMessages(task: AssembledTask, conversation: readonly ChatMessage[]): ChatMessage[] {
  const newCount = task.task_meta.thread?.new_messages ?? 0;
  const start = Math.max(0, task.input.messages.length - newCount);
  return conversation.slice(start);
}

/** Drops assistant tool calls that have no result (and the results of the calls dropped with them). */
function completeRounds(messages: readonly ChatMessage[]): ChatMessage[] {
  const answered = new Set(
    messages.flatMap((message) => (message.role === 'tool' ? [message.tool_call_id] : [])),
  );
  const kept: ChatMessage[] = [];
  const dropped = new Set<string>();
  for (const message of messages) {
    if (message.role === 'assistant' && message.tool_calls?.length) {
      if (message.tool_calls.every((call) => answered.has(call.id))) kept.push(message);
      else for (const call of message.tool_calls) dropped.add(call.id);
      continue;
    }
    if (message.role === 'tool' && dropped.has(message.tool_call_id)) continue;
    kept.push(message);
  }
  return kept;
}

export async function appendThreadTurn(
  threads: ThreadStore,
  task: AssembledTask,
  outcome: LoopOutcome,
  conversation: readonly ChatMessage[],
): Promise<void> {
  const link = task.task_meta.thread;
  if (link === undefined || conversation.length === 0) return;
  const { account_id: accountId, trace_id: traceId } = task.task_meta;
  let messages: ChatMessage[];
  let interrupted = false;
  if (outcome.type === 'done') {
    messages = [...runMessages(task, conversation), { role: 'assistant', content: outcome.data.message }];
  } else if (outcome.data.code === ErrorCode.CANCELLED) {
    const record = (await threads.get(accountId, link.thread_id))?.record;
    if (record?.active?.trace_id !== traceId || record.active.cancel_mode !== 'interrupt') return;
    messages = completeRounds(runMessages(task, conversation));
    interrupted = true;
  } else {
    return;
  }
  if (messages.length === 0) return;
  await threads.appendTurn(
    accountId,
    link.thread_id,
    {
      type: 'turn',
      trace_id: traceId,
      messages,
      at: new Date().toISOString(),
      ...(interrupted ? { interrupted: true } : {}),
    },
    link.base_seq ?? 0,
  );
}

export async function releaseThread(threads: ThreadStore, task: AssembledTask, log: Logger): Promise<void> {
  const link = task.task_meta.thread;
  if (link === undefined) return;
  try {
    // The next queued run is promoted here and published by the gateways' promoters (executors queue no task).
    const next = await threads.release(task.task_meta.account_id, link.thread_id, task.task_meta.trace_id, {
      publish: false,
    });
    if (next !== undefined)
      log.info({ thread_id: link.thread_id, next_trace_id: next }, 'next queued thread run promoted');
  } catch (error) {
    // A claim left behind is released by the next admission or read of the thread (its task has ended).
    log.warn(
      { err: error, thread_id: link.thread_id },
      'thread could not be released; left to the stale-claim check',
    );
  }
}
