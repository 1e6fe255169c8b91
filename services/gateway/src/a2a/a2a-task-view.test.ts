import { TaskState } from '@a2a-js/sdk';
import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { A2aTaskView, isAfter, parseCursor } from './a2a-task-view.js';

const at = { trace_id: 'ab'.repeat(16), ts: '2026-11-28T08:00:00Z', attempt: 1 };
const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

describe('A2A task view', () => {
  it('when an approval is asked the task is input required with how to decide; a missing credential ends it auth required', () => {
    const view = new A2aTaskView(at.trace_id, 'th_1');
    const events: TaskEvent[] = [
      { ...at, seq: 1, type: 'message_chunk', data: { delta: 'hi' } },
      {
        ...at,
        seq: 2,
        type: 'approval_requested',
        data: { call_id: 'c1', tool: 'pay', arguments: {}, reason: 'money', expires_at: at.ts },
      },
    ];
    const updates = events.flatMap((event) => view.add(event));
    expect(updates.map((update) => update.cursor)).toEqual([
      { seq: 1, index: 0 },
      { seq: 2, index: 0 },
    ]);
    const task = view.task();
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const prompt = task.status?.message?.parts[0]?.content;
    expect(prompt?.$case === 'text' && prompt.value).toContain('/approvals/c1');
    expect(task.metadata).toEqual({ agentmesh: { cursor: '2' } });

    view.add({
      ...at,
      seq: 3,
      type: 'error',
      data: { code: 'CREDENTIALS_MISSING', message: 'no key', retryable: false },
    });
    expect(view.task().status?.state).toBe(TaskState.TASK_STATE_AUTH_REQUIRED);
  });

  it('when the task is done its answer and structured output are the artifact, before the completed status', () => {
    const view = new A2aTaskView(at.trace_id, 'th_1');
    const updates = view.add({
      ...at,
      seq: 4,
      type: 'done',
      data: { message: '{"n":1}', steps: 1, usage, duration_ms: 1, output: { n: 1 } },
    });
    expect(updates.map((update) => [update.response.payload?.$case, update.cursor.index])).toEqual([
      ['artifactUpdate', 0],
      ['statusUpdate', 1],
    ]);
    expect(view.task().artifacts[0]?.parts.map((part) => part.content)).toEqual([
      { $case: 'text', value: '{"n":1}' },
      { $case: 'data', value: { n: 1 } },
    ]);
  });

  it('a cursor names an update of an event, or all of its updates; anything else is no cursor', () => {
    expect(parseCursor('6:0')).toEqual({ seq: 6, index: 0 });
    const whole = parseCursor('6');
    expect(whole !== undefined && isAfter(whole, 6, 1)).toBe(false);
    expect(whole !== undefined && isAfter(whole, 7, 0)).toBe(true);
    expect(isAfter({ seq: 6, index: 0 }, 6, 1)).toBe(true);
    for (const bad of ['', 'yesterday', '-1', '1:2:3', '1e3']) expect(parseCursor(bad)).toBeUndefined();
  });
});
