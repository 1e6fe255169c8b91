/**
 * Test material for the assembler: seed-shaped tool definitions, an agent bound to them, received tasks and
 * canary credential values whose absence from every output the tests check.
 */
import { readFileSync } from 'node:fs';
import {
  importToolDefinition,
  newTraceId,
  ReceivedTask,
  type AgentDefinitionInput,
  type ToolDefinition,
} from '@agentmesh/protocol';

/** The protocol package's copies of the seed documents' JSON examples. */
export const SEED_FIXTURES = new URL('../../../../libs/protocol/src/__fixtures__/seeds/', import.meta.url);

export function seedFixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, SEED_FIXTURES), 'utf8')) as unknown;
}

export function importTool(json: unknown): ToolDefinition {
  const imported = importToolDefinition(json);
  if (!imported.success) throw new Error(`fixture is not a tool: ${String(imported.error)}`);
  return imported.tool;
}

/** Seed 000's qichacha plugin: needs QCC_KEY and QCC_SECRET. */
export const qichachaTool = (): ToolDefinition => importTool(seedFixture('000-s2-plugin.json'));

/** A seed 000 plugin with bearer auth from WEATHER_TOKEN. */
export function weatherTool(overrides: Record<string, unknown> = {}): ToolDefinition {
  return importTool({
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    execution: {
      method: 'GET',
      base_url: 'https://weather.example.com/v1/current',
      param_placement: 'query',
    },
    auth_config: { type: 'bearer', token_source: 'WEATHER_TOKEN' },
    ...overrides,
  });
}

export const CANARY = {
  QCC_KEY: 'canary-qcc-key-7f3a91',
  QCC_SECRET: 'canary-qcc-secret-2b8c44',
  WEATHER_TOKEN: 'canary-weather-token-9d1e07',
  MODEL_KEY: 'canary-model-key-5c6f28',
} as const;

export const ACCOUNT = 'acct_test';
export const USER = 'user-42';

export function qichachaAgent(overrides: Partial<AgentDefinitionInput> = {}): AgentDefinitionInput {
  return {
    workflow_id: 'company_research',
    system_prompt: 'You research companies. Use the tools.',
    model: {
      model_name: 'demo-model',
      base_url: 'http://127.0.0.1:9/v1',
      temperature: 0.2,
      api_key_credential: 'MODEL_KEY',
    },
    tools: ['search_company_basic'],
    max_steps: 7,
    deadline_ms: 120_000,
    ...overrides,
  };
}

export function receivedTask(
  workflowId: string,
  overrides: { traceId?: string; userId?: string; accountId?: string } = {},
): ReceivedTask {
  return ReceivedTask.parse({
    task_meta: {
      workflow_id: workflowId,
      trace_id: overrides.traceId ?? newTraceId(),
      user_id: overrides.userId ?? USER,
      account_id: overrides.accountId ?? ACCOUNT,
      submitted_at: new Date().toISOString(),
    },
    input: { messages: [{ role: 'user', content: 'Who runs ByteDance?' }], variables: { lang: 'en' } },
  });
}
