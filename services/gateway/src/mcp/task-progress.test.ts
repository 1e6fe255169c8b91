import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { formatSseEvent } from '../sse-stream.js';
import { eventOfFrame } from '../task-event-objects.js';
import { MAX_PROGRESS_MESSAGE_CHARS, progressMessage } from './task-progress.js';

const envelope = { trace_id: '4bf92f3577b34da6a3ce929d0e0e4736', ts: '2026-01-01T00:00:00.000Z', attempt: 1 };

describe('task events as MCP progress', () => {
  it('a resumed attempt is a progress message saying the answer restarts, so reported answer pieces after it are not read as more answer', () => {
    const resumed: TaskEvent = {
      ...envelope,
      seq: 6,
      attempt: 2,
      type: 'attempt_started',
      data: { drop_text_after_seq: 3, resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
    };
    expect(progressMessage(resumed)).toBe('attempt 2 resumed the task; the answer restarts after event 3');
  });

  it('a tool call waiting for approval is a progress message naming the tool, the reason and how to approve it; the decision is one too', () => {
    const requested: TaskEvent = {
      ...envelope,
      seq: 4,
      type: 'approval_requested',
      data: {
        call_id: 'call_7',
        tool: 'pay_invoice',
        arguments: { amount: 1200 },
        reason: 'amount above 1000',
        expires_at: '2026-01-01T01:00:00.000Z',
      },
    };
    expect(progressMessage(requested)).toBe(
      `pay_invoice waits for approval (amount above 1000): approve or deny call call_7 with POST /v1/tasks/${envelope.trace_id}/approvals/call_7 or agentmesh approve|deny ${envelope.trace_id} call_7 before 2026-01-01T01:00:00.000Z`,
    );
    const decided: TaskEvent = {
      ...envelope,
      seq: 5,
      type: 'approval_decided',
      data: {
        call_id: 'call_7',
        tool: 'pay_invoice',
        approved: true,
        decided_at: '2026-01-01T00:10:00.000Z',
      },
    };
    expect(progressMessage(decided)).toBe('pay_invoice approved');
  });

  it('tool calls, tool results and answer pieces are progress; reasoning and the terminal event are not', () => {
    const events: TaskEvent[] = [
      { ...envelope, seq: 1, type: 'tool_thinking', data: { delta: 'hmm' } },
      { ...envelope, seq: 2, type: 'tool_start', data: { call_id: 'c1', tool: 'lookup', arguments: {} } },
      {
        ...envelope,
        seq: 3,
        type: 'tool_result',
        data: {
          call_id: 'c1',
          tool: 'lookup',
          ok: false,
          error: { code: 'TOOL_TIMEOUT', message: 'slow' },
          duration_ms: 9,
        },
      },
      {
        ...envelope,
        seq: 4,
        type: 'message_chunk',
        data: { delta: 'x'.repeat(MAX_PROGRESS_MESSAGE_CHARS + 10) },
      },
      {
        ...envelope,
        seq: 5,
        type: 'done',
        data: {
          message: 'x',
          steps: 1,
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          duration_ms: 1,
        },
      },
    ];

    const messages = events.map(progressMessage);

    expect(messages.slice(0, 3)).toEqual([undefined, 'calling lookup', 'lookup failed: TOOL_TIMEOUT']);
    expect(messages[3]).toHaveLength(MAX_PROGRESS_MESSAGE_CHARS);
    expect(messages[4]).toBeUndefined();
  });

  it("a tool's own progress (an MCP tool of the agent) is progress too, with its message or its number", () => {
    const progress = (data: { progress: number; message?: string }): TaskEvent => ({
      ...envelope,
      seq: 2,
      type: 'tool_progress',
      data: { call_id: 'c1', tool: 'report', ...data },
    });
    expect(progressMessage(progress({ progress: 3, message: 'page 3' }))).toBe('report: page 3');
    expect(progressMessage(progress({ progress: 4 }))).toBe('report: 4');
  });

  it('the event of a frame the follower yields is the event formatted into it', () => {
    const event: TaskEvent = {
      ...envelope,
      seq: 7,
      type: 'message_chunk',
      data: { delta: 'line one\nline two: "quoted"' },
    };

    expect(eventOfFrame(formatSseEvent(event))).toEqual(event);
  });
});
