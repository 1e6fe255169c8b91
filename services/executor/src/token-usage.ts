/** Token counts of several model calls added up: a task's total, and the turns of one `<ACTION>` exchange. */
import type { TokenUsage } from '@agentmesh/protocol';

/** Adds `step` into `total`. */
export function addUsage(total: TokenUsage, step: TokenUsage): void {
  total.prompt_tokens += step.prompt_tokens;
  total.completion_tokens += step.completion_tokens;
  total.total_tokens += step.total_tokens;
  // Cache counts appear in a total once some step reported them, so a task without caching shows none.
  if (step.cache_read_tokens !== undefined) {
    total.cache_read_tokens = (total.cache_read_tokens ?? 0) + step.cache_read_tokens;
  }
  if (step.cache_write_tokens !== undefined) {
    total.cache_write_tokens = (total.cache_write_tokens ?? 0) + step.cache_write_tokens;
  }
}
