/**
 * What a task has spent on model calls, across its attempts, and its token and cost budget. Each model call
 * adds its usage (and its cost, when the model is priced) and yields the `step_finished` event that says so;
 * a redelivered task starts from the sum of the `step_finished` events its earlier attempts wrote. Between
 * model calls the loop asks {@link TaskSpend.overBudget} whether another may be made.
 *
 * A call whose server sent no usage counts with the client's estimate (characters / 4, see
 * llm/usage-estimate.ts): its `step_finished` says `usage_reported: false`, and so does the task's `done`,
 * but the estimate is added to the totals, the budget and the account's day like reported figures.
 */
import {
  ErrorCode,
  type EventData,
  type TaskEvent,
  type TaskLimits,
  type TokenUsage,
} from '@agentmesh/protocol';
import { costOf, roundUsd, type ModelPrice } from './model-prices.js';
import { addUsage } from '../token-usage.js';

/** The spend of earlier attempts, as their `step_finished` events tell it. */
export interface EarlierSpend {
  readonly usage: TokenUsage;
  /** Dollars of the priced calls among them. */
  readonly costUsd: number;
  /** Some of them counted an estimate (their server sent no usage). */
  readonly estimated?: boolean;
}

/** What the model said about a step besides its usage. */
export interface StepOutcome {
  readonly finishReason?: string | null;
  /** False when the usage is an estimate. */
  readonly usageReported?: boolean;
  /** The place in the agent's list of the model that answered (a fallback's); absent: the first. */
  readonly modelIndex?: number;
}

/**
 * The prices of the task's models, in the agent's order (the first model, then its fallbacks): each step
 * is priced by the model that answered it. One price (or none) stands for a single model.
 */
export type TaskPrices = ModelPrice | readonly (ModelPrice | undefined)[] | undefined;

export type TaskBudget = Pick<TaskLimits, 'max_total_tokens' | 'max_cost_usd'>;

/** Sums the `step_finished` events of a task's log. */
export function earlierSpendOf(events: readonly TaskEvent[]): EarlierSpend {
  const usage: TokenUsage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
  let costUsd = 0;
  let estimated = false;
  for (const event of events) {
    if (event.type !== 'step_finished') continue;
    addUsage(usage, event.data.usage);
    costUsd += event.data.cost_usd ?? 0;
    if (event.data.usage_reported === false) estimated = true;
  }
  return { usage, costUsd: roundUsd(costUsd), ...(estimated ? { estimated } : {}) };
}

export class TaskSpend {
  readonly #usage: TokenUsage;
  #costUsd: number;
  #estimated: boolean;

  /** By the model's place in the agent's list. */
  readonly #prices: readonly (ModelPrice | undefined)[];

  constructor(
    /** The task's models' prices; none priced: the spend has no cost. */
    prices?: TaskPrices,
    earlier?: EarlierSpend,
  ) {
    this.#prices = prices === undefined ? [] : Array.isArray(prices) ? prices : [prices as ModelPrice];
    this.#usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };
    if (earlier !== undefined) addUsage(this.#usage, earlier.usage);
    this.#costUsd = earlier?.costUsd ?? 0;
    this.#estimated = earlier?.estimated === true;
  }

  /** False once some step's usage was an estimate; for the task's `done`. */
  get usageReported(): boolean {
    return !this.#estimated;
  }

  /** Every model call of the task so far (a copy). */
  get usage(): TokenUsage {
    return { ...this.#usage };
  }

  /** Dollars spent so far; undefined when none of the task's models has a price. */
  get costUsd(): number | undefined {
    return this.#priced ? this.#costUsd : undefined;
  }

  get #priced(): boolean {
    return this.#prices.some((price) => price !== undefined);
  }

  /** Adds a model call's usage (estimated or not, it counts); returns the data of its `step_finished` event. */
  addStep(step: number, usage: TokenUsage, outcome: StepOutcome = {}): EventData<'step_finished'> {
    addUsage(this.#usage, usage);
    const estimated = outcome.usageReported === false;
    if (estimated) this.#estimated = true;
    const turn = {
      step,
      ...(outcome.finishReason ? { finish_reason: outcome.finishReason } : {}),
      usage: { ...usage },
      ...(estimated ? { usage_reported: false as const } : {}),
    };
    if (!this.#priced) return { ...turn, total_usage: this.usage };
    // The model that answered sets the price: a turn a fallback took costs the fallback's tokens.
    const price = this.#prices[outcome.modelIndex ?? 0];
    if (price === undefined) return { ...turn, total_usage: this.usage, total_cost_usd: this.#costUsd };
    const cost = costOf(usage, price);
    this.#costUsd = roundUsd(this.#costUsd + cost);
    return { ...turn, cost_usd: cost, total_usage: this.usage, total_cost_usd: this.#costUsd };
  }

  /**
   * The `error` of a task that may not ask the model again: it has used its tokens or (priced) dollars.
   * Undefined while it is within its budget.
   */
  overBudget(budget: TaskBudget | undefined): EventData<'error'> | undefined {
    const maxTokens = budget?.max_total_tokens;
    const used = this.#usage.total_tokens;
    if (maxTokens !== undefined && used >= maxTokens) {
      return {
        code: ErrorCode.BUDGET_EXCEEDED,
        message: `the task used ${used} tokens of its budget of ${maxTokens} (max_total_tokens); the model was not asked again`,
        retryable: false,
        detail: { used_tokens: used, max_total_tokens: maxTokens },
      };
    }
    const maxCost = budget?.max_cost_usd;
    const cost = this.costUsd;
    if (maxCost !== undefined && cost !== undefined && cost >= maxCost) {
      return {
        code: ErrorCode.BUDGET_EXCEEDED,
        message: `the task spent $${cost} of its budget of $${maxCost} (max_cost_usd); the model was not asked again`,
        retryable: false,
        detail: { used_cost_usd: cost, max_cost_usd: maxCost },
      };
    }
    return undefined;
  }
}
