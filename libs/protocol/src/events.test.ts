import { describe, expect, it } from 'vitest';
import { rejectionPaths } from './__fixtures__/rejection-paths.js';
import {
  EventType,
  TERMINAL_EVENT_TYPES,
  TaskEvent,
  isTerminalEvent,
  isTerminalEventType,
} from './events.js';
import { finalStatusFields, TaskStatus, TaskStatusRecord, isFinalTaskStatus } from './task-status.js';

const envelope = {
  trace_id: '4bf92f3577b34da6a3ce929d0e0e4736',
  seq: 1,
  ts: '2025-12-23T10:00:00.123Z',
  attempt: 1,
};

const examples = {
  tool_thinking: { delta: 'The user wants company data; ' },
  tool_call_delta: { call_id: 'call_1', tool: 'search_company_basic', delta: '{"keyword": "字节' },
  tool_start: { call_id: 'call_1', tool: 'search_company_basic', arguments: { keyword: '字节跳动' } },
  tool_result: {
    call_id: 'call_1',
    tool: 'search_company_basic',
    ok: true,
    result: { total: 1 },
    duration_ms: 412,
  },
  message_chunk: { delta: '字节跳动成立于' },
  done: {
    message: '字节跳动成立于2012年。',
    steps: 2,
    usage: { prompt_tokens: 812, completion_tokens: 64, total_tokens: 876 },
    duration_ms: 5120,
  },
  error: { code: 'LLM_UNAVAILABLE', message: 'model endpoint answered 503 three times', retryable: true },
} as const;

describe('task events', () => {
  it.each(Object.entries(examples))('accepts a %s event', (type, data) => {
    const event = { ...envelope, type, data };
    expect(TaskEvent.parse(event)).toEqual(event);
  });

  it('accepts a failed tool result carrying an error instead of a result', () => {
    const data = {
      call_id: 'call_1',
      tool: 'search_company_basic',
      ok: false,
      error: { code: 'TOOL_TIMEOUT', message: 'no answer within 30000 ms' },
      duration_ms: 30000,
    };
    expect(TaskEvent.safeParse({ ...envelope, type: 'tool_result', data }).success).toBe(true);
  });

  it('accepts tool arguments the model produced as unparsable text', () => {
    const data = { call_id: 'call_1', tool: 'x', arguments: '{"keyword": ' };
    expect(TaskEvent.safeParse({ ...envelope, type: 'tool_start', data }).success).toBe(true);
  });

  it.each([
    {
      scenario: 'a done event without usage',
      type: 'done',
      data: { message: 'hi', steps: 1, duration_ms: 3 },
      at: 'data.usage',
    },
    {
      scenario: 'a message chunk without delta',
      type: 'message_chunk',
      data: { text: 'hi' },
      at: 'data.delta',
    },
    {
      scenario: 'a tool start without call_id',
      type: 'tool_start',
      data: { tool: 't', arguments: {} },
      at: 'data.call_id',
    },
    {
      scenario: 'a failed tool result without error',
      type: 'tool_result',
      data: { call_id: 'c', tool: 't', ok: false, result: 1, duration_ms: 1 },
      at: 'data.error',
    },
    {
      scenario: 'an error event with an unknown code',
      type: 'error',
      data: { code: 'OOPS', message: 'm', retryable: false },
      at: 'data.code',
    },
    {
      scenario: 'an error event without retryable',
      type: 'error',
      data: { code: 'INTERNAL', message: 'm' },
      at: 'data.retryable',
    },
  ])('rejects $scenario at $at', ({ type, data, at }) => {
    expect(rejectionPaths(TaskEvent, { ...envelope, type, data })).toContain(at);
  });

  it('rejects an unknown type, a seq below 1, attempt 0 and a non-ISO timestamp', () => {
    expect(rejectionPaths(TaskEvent, { ...envelope, type: 'progress', data: {} })).toEqual(['type']);
    expect(
      rejectionPaths(TaskEvent, { ...envelope, seq: 0, type: 'message_chunk', data: { delta: '' } }),
    ).toEqual(['seq']);
    expect(
      rejectionPaths(TaskEvent, { ...envelope, attempt: 0, type: 'message_chunk', data: { delta: '' } }),
    ).toEqual(['attempt']);
    expect(
      rejectionPaths(TaskEvent, { ...envelope, ts: 'yesterday', type: 'message_chunk', data: { delta: '' } }),
    ).toEqual(['ts']);
  });

  it('done and error are terminal, the rest are not', () => {
    expect([...TERMINAL_EVENT_TYPES].sort()).toEqual(['done', 'error']);
    for (const [type, data] of Object.entries(examples)) {
      const event = TaskEvent.parse({ ...envelope, type, data });
      expect(isTerminalEvent(event), type).toBe(type === EventType.DONE || type === EventType.ERROR);
    }
    expect(isTerminalEventType('message_chunk')).toBe(false);
    expect(isTerminalEventType('error')).toBe(true);
  });
});

describe('task status records', () => {
  it('accepts a finished task with its last seq and a failed one with its error', () => {
    const base = {
      trace_id: envelope.trace_id,
      account_id: 'acme',
      workflow_id: 'agent_chat',
      attempt: 1,
      updated_at: '2025-12-23T10:00:05Z',
    };
    expect(TaskStatusRecord.safeParse({ ...base, status: 'done', last_seq: 42 }).success).toBe(true);
    const failed = {
      ...base,
      status: 'error',
      error: { code: 'CREDENTIALS_MISSING', message: 'missing QCC_KEY' },
    };
    expect(TaskStatusRecord.safeParse(failed).success).toBe(true);
    expect(TaskStatusRecord.safeParse({ ...base, status: 'paused' }).success).toBe(false);
  });

  it('a stored terminal event settles the status: done with its usage, a CANCELLED error as cancelled, any other as error', () => {
    const at = { trace_id: envelope.trace_id, ts: '2025-12-23T10:00:05Z', attempt: 2 };
    const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
    expect(
      finalStatusFields({
        ...at,
        seq: 9,
        type: 'done',
        data: { message: 'hi', steps: 1, usage, duration_ms: 12, cost_usd: 0.5 },
      }),
    ).toEqual({ status: 'done', error: undefined, duration_ms: 12, usage, cost_usd: 0.5, last_seq: 9 });
    const stopped = { code: 'CANCELLED', message: 'stop', retryable: false } as const;
    expect(finalStatusFields({ ...at, seq: 4, type: 'error', data: stopped })).toEqual({
      status: 'cancelled',
      error: stopped,
      last_seq: 4,
    });
    const failed = { code: 'LLM_ERROR', message: 'down', retryable: true } as const;
    expect(finalStatusFields({ ...at, seq: 5, type: 'error', data: failed })).toMatchObject({
      status: 'error',
      error: failed,
    });
  });

  it('done, error and cancelled are final; queued and running are not', () => {
    expect(Object.values(TaskStatus).filter(isFinalTaskStatus).sort()).toEqual([
      'cancelled',
      'done',
      'error',
    ]);
  });
});
