import { describe, expect, it } from 'vitest';
import { costOf, ModelPriceTableJson, priceOf } from './model-prices.js';

describe('the price table', () => {
  const table = ModelPriceTableJson.parse(
    JSON.stringify({
      'gpt-4o-mini': { input_per_million_usd: 0.15, output_per_million_usd: 0.6 },
      'models.internal:8443/gpt-4o-mini': { input_per_million_usd: 0, output_per_million_usd: 0 },
    }),
  );

  it('when a model is priced for its endpoint host, that price wins over the bare model name', () => {
    expect(
      priceOf(table, { model_name: 'gpt-4o-mini', base_url: 'https://models.internal:8443/v1' }),
    ).toEqual({
      input_per_million_usd: 0,
      output_per_million_usd: 0,
    });
    expect(priceOf(table, { model_name: 'gpt-4o-mini', base_url: 'https://api.openai.com/v1' })).toEqual({
      input_per_million_usd: 0.15,
      output_per_million_usd: 0.6,
    });
  });

  it('when a model is not in the table, it has no price', () => {
    expect(priceOf(table, { model_name: 'llama3', base_url: 'http://127.0.0.1:11434/v1' })).toBeUndefined();
    expect(priceOf(table, { model_name: 'constructor', base_url: 'http://127.0.0.1/v1' })).toBeUndefined();
  });

  it("a call's cost is its prompt tokens at the input price plus its completion tokens at the output price, per million", () => {
    const price = { input_per_million_usd: 0.15, output_per_million_usd: 0.6 };
    expect(costOf({ prompt_tokens: 1_000_000, completion_tokens: 0, total_tokens: 1_000_000 }, price)).toBe(
      0.15,
    );
    expect(costOf({ prompt_tokens: 1000, completion_tokens: 500, total_tokens: 1500 }, price)).toBe(0.00045);
    expect(costOf({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, price)).toBe(0);
  });

  it('when the usage has cache reads and writes and the price has cache prices, those tokens are priced apart from the rest of the input', () => {
    const price = {
      input_per_million_usd: 3,
      output_per_million_usd: 15,
      cache_read_per_million_usd: 0.3,
      cache_write_per_million_usd: 3.75,
    };
    // Anthropic's recorded prompt-cache turn: 6 plain, 6289 read, 3337 written, 198 out.
    const usage = {
      prompt_tokens: 9632,
      completion_tokens: 198,
      total_tokens: 9830,
      cache_read_tokens: 6289,
      cache_write_tokens: 3337,
    };
    expect(costOf(usage, price)).toBe((6 * 3 + 6289 * 0.3 + 3337 * 3.75 + 198 * 15) / 1e6);
    // Without cache prices, cached tokens cost what input costs.
    expect(costOf(usage, { input_per_million_usd: 3, output_per_million_usd: 15 })).toBe(
      (9632 * 3 + 198 * 15) / 1e6,
    );
  });

  it('when MODEL_PRICES is not JSON or a price is negative or misnamed, the config is refused', () => {
    expect(ModelPriceTableJson.safeParse('{gpt').success).toBe(false);
    expect(
      ModelPriceTableJson.safeParse('{"m": {"input_per_million_usd": -1, "output_per_million_usd": 1}}')
        .success,
    ).toBe(false);
    expect(
      ModelPriceTableJson.safeParse('{"m": {"input_usd": 1, "output_per_million_usd": 1}}').success,
    ).toBe(false);
    expect(ModelPriceTableJson.parse(undefined).size).toBe(0);
  });
});
