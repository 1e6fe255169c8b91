import type { TaskEvent } from '@agentmesh/protocol';
import { describe, expect, it } from 'vitest';
import { earlierSpendOf, TaskSpend } from './task-spend.js';

const TRACE = 'a'.repeat(32);
const usage = (prompt: number, completion: number) => ({
  prompt_tokens: prompt,
  completion_tokens: completion,
  total_tokens: prompt + completion,
});

function stepFinished(
  seq: number,
  attempt: number,
  step: number,
  tokens: [number, number],
  cost?: number,
): TaskEvent {
  return {
    trace_id: TRACE,
    seq,
    attempt,
    ts: '2026-11-24T00:00:00.000Z',
    type: 'step_finished',
    data: {
      step,
      usage: usage(...tokens),
      ...(cost === undefined ? {} : { cost_usd: cost }),
      total_usage: usage(...tokens),
    },
  };
}

describe("a task's spend", () => {
  it("what earlier attempts spent is the sum of their step_finished events' usage and cost", () => {
    const events: TaskEvent[] = [
      stepFinished(1, 1, 1, [10, 5], 0.1),
      {
        trace_id: TRACE,
        seq: 2,
        attempt: 1,
        ts: '2026-11-24T00:00:00.000Z',
        type: 'message_chunk',
        data: { delta: 'x' },
      },
      stepFinished(3, 2, 2, [20, 2], 0.2),
      stepFinished(4, 2, 3, [1, 1]),
    ];
    expect(earlierSpendOf(events)).toEqual({ usage: usage(31, 8), costUsd: 0.3 });
    expect(earlierSpendOf([])).toEqual({ usage: usage(0, 0), costUsd: 0 });
  });

  it('a task under both budgets may ask the model again; at or over either one it may not', () => {
    const spend = new TaskSpend({ input_per_million_usd: 1_000_000, output_per_million_usd: 0 });
    spend.addStep(1, usage(2, 3)); // $2, 5 tokens
    expect(spend.overBudget(undefined)).toBeUndefined();
    expect(spend.overBudget({ max_total_tokens: 6, max_cost_usd: 3 })).toBeUndefined();
    expect(spend.overBudget({ max_total_tokens: 5 })).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: 'the task used 5 tokens of its budget of 5 (max_total_tokens); the model was not asked again',
      retryable: false,
    });
    expect(spend.overBudget({ max_cost_usd: 2 })).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      message: 'the task spent $2 of its budget of $2 (max_cost_usd); the model was not asked again',
      retryable: false,
    });
  });

  it('an unpriced task has no cost, and a cost budget never stops it', () => {
    const spend = new TaskSpend(undefined, { usage: usage(5, 5), costUsd: 3 });
    expect(spend.addStep(2, usage(1, 1))).toEqual({ step: 2, usage: usage(1, 1), total_usage: usage(6, 6) });
    expect(spend.costUsd).toBeUndefined();
    expect(spend.overBudget({ max_cost_usd: 0.01 })).toBeUndefined();
  });
});

describe('a task with fallback models', () => {
  const first = { input_per_million_usd: 1, output_per_million_usd: 2 };
  const fallback = { input_per_million_usd: 10, output_per_million_usd: 20 };

  it('when a fallback model answers a turn, the turn costs that model’s price and the total adds it', () => {
    const spend = new TaskSpend([first, fallback]);
    expect(spend.addStep(1, usage(1000, 100))).toMatchObject({ cost_usd: 0.0012, total_cost_usd: 0.0012 });
    expect(spend.addStep(2, usage(1000, 100), { modelIndex: 1 })).toMatchObject({
      cost_usd: 0.012,
      total_cost_usd: 0.0132,
    });
    expect(spend.costUsd).toBe(0.0132);
  });

  it('when the answering model has no price but another of the list has, the turn has no cost and the total stays', () => {
    const spend = new TaskSpend([first, undefined]);
    spend.addStep(1, usage(1000, 100));
    const step = spend.addStep(2, usage(1000, 100), { modelIndex: 1 });
    expect(step.cost_usd).toBeUndefined();
    expect(step.total_cost_usd).toBe(0.0012);
    expect(spend.usage.total_tokens).toBe(2200);
  });

  it('when no model of the list is priced, the task has no cost', () => {
    const spend = new TaskSpend([undefined, undefined]);
    expect(spend.addStep(1, usage(10, 1), { modelIndex: 1 }).total_cost_usd).toBeUndefined();
    expect(spend.costUsd).toBeUndefined();
  });
});
