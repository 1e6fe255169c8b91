import type { AssembledTask, ChatMessage } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import type { ThreadStore } from '@agentmesh/bus';
import { appendThreadTurn } from './thread-turns.js';

const TRACE = 'a'.repeat(32);
const call = (id: string) => ({ id, type: 'function' as const, function: { name: 'pay', arguments: '{}' } });

function taskWith(messages: ChatMessage[], newMessages: number): AssembledTask {
  return {
    task_meta: {
      workflow_id: 'chat',
      trace_id: TRACE,
      user_id: 'u',
      account_id: 'acme',
      submitted_at: '2026-11-28T00:00:00Z',
      thread: {
        thread_id: 't1',
        history_messages: messages.length - 1 - newMessages,
        new_messages: newMessages,
        base_seq: 4,
      },
    },
    input: { messages, variables: {} },
  } as unknown as AssembledTask;
}

/** A store that records what would be appended, and says the run was interrupted (or not). */
function recordingStore(cancelMode?: 'interrupt' | 'rollback') {
  const appended: { messages: ChatMessage[]; interrupted?: boolean; afterSeq: number }[] = [];
  const store = {
    get: async () => ({
      record: { active: { trace_id: TRACE, since: '', ...(cancelMode ? { cancel_mode: cancelMode } : {}) } },
    }),
    appendTurn: async (
      _a: string,
      _t: string,
      turn: { messages: ChatMessage[]; interrupted?: boolean },
      afterSeq: number,
    ) => {
      appended.push({
        messages: turn.messages,
        ...(turn.interrupted ? { interrupted: true } : {}),
        afterSeq,
      });
      return { seq: 5, duplicate: false };
    },
  } as unknown as ThreadStore;
  return { store, appended };
}

const input: ChatMessage[] = [
  { role: 'system', content: 'terse' },
  { role: 'user', content: 'old' },
  { role: 'assistant', content: 'old answer' },
  { role: 'user', content: 'new' },
];
const loop: ChatMessage[] = [
  ...input,
  { role: 'assistant', content: null, tool_calls: [call('c1')] },
  { role: 'tool', tool_call_id: 'c1', content: 'paid' },
  { role: 'assistant', content: null, tool_calls: [call('c2'), call('c3')] },
  { role: 'tool', tool_call_id: 'c2', content: 'paid' },
];
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

describe('what a thread run leaves in its thread', () => {
  it('when the run is done, its turn is the new input, its tool rounds and the answer, after the history it read', async () => {
    const { store, appended } = recordingStore();
    const done = { type: 'done' as const, data: { message: 'all paid', steps: 3, usage, duration_ms: 1 } };
    await appendThreadTurn(store, taskWith(input, 1), done, loop);
    expect(appended).toEqual([
      { messages: [...loop.slice(3), { role: 'assistant', content: 'all paid' }], afterSeq: 4 },
    ]);
  });

  it('when an interrupt cancels it, the finished round stays and the call without a result goes, with its sibling', async () => {
    const { store, appended } = recordingStore('interrupt');
    const cancelled = {
      type: 'error' as const,
      data: { code: 'CANCELLED' as const, message: 'x', retryable: false },
    };
    await appendThreadTurn(store, taskWith(input, 1), cancelled, loop);
    expect(appended).toEqual([{ messages: loop.slice(3, 6), interrupted: true, afterSeq: 4 }]);
  });

  it('when it is rolled back, cancelled plainly or fails, nothing is appended', async () => {
    for (const mode of ['rollback', undefined] as const) {
      const { store, appended } = recordingStore(mode);
      await appendThreadTurn(
        store,
        taskWith(input, 1),
        { type: 'error', data: { code: 'CANCELLED', message: 'x', retryable: false } },
        loop,
      );
      await appendThreadTurn(
        store,
        taskWith(input, 1),
        { type: 'error', data: { code: 'LLM_ERROR', message: 'x', retryable: true } },
        loop,
      );
      expect(appended).toEqual([]);
    }
  });
});
