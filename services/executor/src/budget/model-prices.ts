/**
 * The executor's price table (MODEL_PRICES) and what a model call costs by it. A model is looked up as
 * `<base_url host>/<model_name>` first (one model name served at two prices), then by `model_name`; a
 * model in neither has no price, and its calls no cost.
 */
import type { TokenUsage } from '@agentmesh/protocol';
import { z } from 'zod';

export const ModelPrice = z.strictObject({
  input_per_million_usd: z.number().nonnegative(),
  output_per_million_usd: z.number().nonnegative(),
  /** Input tokens read from the provider's prompt cache; absent: priced as input. */
  cache_read_per_million_usd: z.number().nonnegative().optional(),
  /** Input tokens written to the prompt cache (Anthropic: 1.25× input for 5-minute entries); absent: as input. */
  cache_write_per_million_usd: z.number().nonnegative().optional(),
});
export type ModelPrice = z.infer<typeof ModelPrice>;

export type ModelPriceTable = ReadonlyMap<string, ModelPrice>;

/** MODEL_PRICES as configured: a JSON object of prices by model key. */
export const ModelPriceTableJson = z
  .string()
  .default('{}')
  .transform((raw, ctx): unknown => {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be a JSON object of prices by model' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string().min(1), ModelPrice))
  .transform((prices): ModelPriceTable => new Map(Object.entries(prices)));

/** The price of a task's model, or undefined when the table does not know it. */
export function priceOf(
  table: ModelPriceTable,
  model: { model_name: string; base_url: string },
): ModelPrice | undefined {
  return table.get(`${hostOf(model.base_url)}/${model.model_name}`) ?? table.get(model.model_name);
}

/** The prices of a task's models in the agent's order (the first, then its fallbacks); see TaskSpend. */
export function pricesOf(
  table: ModelPriceTable,
  config: {
    model: { model_name: string; base_url: string };
    fallback_models?: readonly { model_name: string; base_url: string }[] | undefined;
  },
): (ModelPrice | undefined)[] {
  return [config.model, ...(config.fallback_models ?? [])].map((model) => priceOf(table, model));
}

/**
 * US dollars of one call's usage: cached input tokens (a part of `prompt_tokens`) at their own prices where
 * the table gives them, the rest of the input at the input price. Rounded to 1e-10 dollars, so sums of many calls stay free of binary
 * fractions' noise (`0.1 + 0.2`).
 */
export function costOf(usage: TokenUsage, price: ModelPrice): number {
  const read = usage.cache_read_tokens ?? 0;
  const written = usage.cache_write_tokens ?? 0;
  const plainInput = Math.max(0, usage.prompt_tokens - read - written);
  const input = price.input_per_million_usd;
  return roundUsd(
    (plainInput * input +
      read * (price.cache_read_per_million_usd ?? input) +
      written * (price.cache_write_per_million_usd ?? input) +
      usage.completion_tokens * price.output_per_million_usd) /
      1_000_000,
  );
}

export function roundUsd(usd: number): number {
  return Math.round(usd * 1e10) / 1e10;
}

function hostOf(baseUrl: string): string {
  try {
    return new URL(baseUrl).host;
  } catch {
    return '';
  }
}
