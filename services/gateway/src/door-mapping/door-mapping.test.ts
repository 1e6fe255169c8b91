import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import {
  DoorTaskState,
  PendingApprovals,
  doorStateAfter,
  doorStateOfStatus,
  isEndedDoorState,
  taskOutcomeOf,
} from './index.js';

const at = { trace_id: 'ab'.repeat(16), ts: '2026-11-28T08:00:00Z', attempt: 1 };
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
const requested = (seq: number, callId: string): TaskEvent => ({
  ...at,
  seq,
  type: 'approval_requested',
  data: { call_id: callId, tool: 'pay', arguments: {}, reason: 'money', expires_at: at.ts },
});

describe('door task states', () => {
  it('a status record maps to one state each, a missing credential to auth required', () => {
    const states = (['queued', 'running', 'waiting_approval', 'done', 'cancelled'] as const).map((status) =>
      doorStateOfStatus({ status }),
    );
    expect(states).toEqual(['submitted', 'working', 'input_required', 'completed', 'canceled']);
    const missing = { code: 'CREDENTIALS_MISSING', message: 'no key' } as const;
    expect(doorStateOfStatus({ status: 'error', error: missing })).toBe('auth_required');
    expect(doorStateOfStatus({ status: 'error', error: { code: 'LLM_ERROR', message: 'x' } })).toBe('failed');
  });

  it('streamed events move the state: text starts work, an approval asks for input, its decision resumes, the end settles it', () => {
    const events: TaskEvent[] = [
      { ...at, seq: 1, type: 'message_chunk', data: { delta: 'hi' } },
      requested(2, 'c1'),
      {
        ...at,
        seq: 3,
        type: 'approval_decided',
        data: { call_id: 'c1', tool: 'pay', approved: true, decided_at: at.ts },
      },
      { ...at, seq: 4, type: 'error', data: { code: 'CANCELLED', message: 'stop', retryable: false } },
    ];
    const seen: DoorTaskState[] = [];
    events.reduce<DoorTaskState>((state, event) => {
      const next = doorStateAfter(state, event);
      seen.push(next);
      return next;
    }, DoorTaskState.SUBMITTED);
    expect(seen).toEqual(['working', 'input_required', 'working', 'canceled']);
    expect(seen.map(isEndedDoorState)).toEqual([false, false, false, true]);
  });
});

describe('pending approvals', () => {
  it('a request waits until its own decision, in the order asked', () => {
    const pending = new PendingApprovals();
    pending.add(requested(1, 'c1'));
    pending.add(requested(2, 'c2'));
    pending.add({
      ...at,
      seq: 3,
      type: 'approval_decided',
      data: { call_id: 'c1', tool: 'pay', approved: false, decided_at: at.ts },
    });
    expect(pending.waiting.map((approval) => approval.call_id)).toEqual(['c2']);
  });
});

describe('task answers', () => {
  it('done gives its final text, parsed output and why it was cut; an error its code', () => {
    const done = {
      ...at,
      seq: 5,
      type: 'done',
      data: {
        message: '{"n":1}',
        steps: 1,
        usage,
        duration_ms: 3,
        output: { n: 1 },
        truncated: true,
        finish_reason: 'length',
      },
    } as const;
    expect(taskOutcomeOf(done)).toEqual({
      ok: true,
      answer: { text: '{"n":1}', output: { n: 1 }, incomplete: 'length' },
    });
    const failed = {
      ...at,
      seq: 2,
      type: 'error',
      data: { code: 'TOOL_ERROR', message: 'x', retryable: false, detail: 1 },
    } as const;
    expect(taskOutcomeOf(failed)).toEqual({
      ok: false,
      failure: { code: 'TOOL_ERROR', message: 'x', retryable: false },
    });
  });
});
