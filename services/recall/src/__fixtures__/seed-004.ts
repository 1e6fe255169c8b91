/**
 * Seed 004's JSON examples (kept once, in the protocol's fixtures) and the upstream answers built from them:
 * the action query output (§4.3) with the action source (§4.2), and the tool details behind the responses
 * of §3.1 and of the appendix (§11).
 */
import { readFileSync } from 'node:fs';

const SEEDS = new URL('../../../../libs/protocol/src/__fixtures__/seeds/', import.meta.url);

export function seedFixture<T = unknown>(file: string): T {
  return JSON.parse(readFileSync(new URL(file, SEEDS), 'utf8')) as T;
}

export interface SeedDynamicTool {
  name: string;
  description: string;
  parameters: {
    type: 'object';
    properties: Record<string, { type: string; description?: string }>;
    required: string[];
  };
  api_url: string;
  original_schema: Record<string, unknown>;
  fixed_params: Record<string, Record<string, unknown>>;
}

export const SEED_ACTION_SOURCE = seedFixture<{
  action_source: { type: string; box_id: string; tool_id: string };
}>('004-s4.2.2-action-source.json').action_source;

/** §4.3.1 output plus §4.2.2's source: what ontology-query answers in the seed. */
export function seedActionQueryAnswer(source: object = SEED_ACTION_SOURCE): Record<string, unknown> {
  return { ...seedFixture<object>('004-s4.3.1-action-query-output.json'), action_source: source };
}

/** The expected answer of a seed example response file, and the tool detail it was made from. */
export function seedExample(file: '004-s3.1-response.json' | '004-s11.1-response.json'): {
  expected: SeedDynamicTool;
  toolDetail: { name: string; description: string; api_spec: Record<string, unknown> };
} {
  const [expected] = seedFixture<{ _dynamic_tools: SeedDynamicTool[] }>(file)._dynamic_tools;
  if (!expected) throw new Error(`${file} has no dynamic tool`);
  return {
    expected,
    toolDetail: {
      name: expected.name,
      description: expected.description,
      api_spec: expected.original_schema,
    },
  };
}
