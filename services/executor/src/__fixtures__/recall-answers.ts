// Seed 004 recall answers for the executor's tests: the appendix (§11) tool, renamed and pointed at a test
// server, in the `_dynamic_tools` shape the recall service sends.
import { readFileSync } from 'node:fs';
import type { DynamicToolInput } from '@agentmesh/protocol';

const APPENDIX = new URL(
  '../../../../libs/protocol/src/__fixtures__/seeds/004-s11.1-response.json',
  import.meta.url,
);

/** The seed appendix's dynamic tool with `name` and `api_url` replaced. */
export function appendixDynamicTool(apiUrl: string, name = 'query_object_instances'): DynamicToolInput {
  const answer = JSON.parse(readFileSync(APPENDIX, 'utf8')) as { _dynamic_tools: DynamicToolInput[] };
  const tool = answer._dynamic_tools[0];
  if (tool === undefined) throw new Error('the seed appendix has no dynamic tool');
  return { ...tool, name, api_url: apiUrl };
}

/** `{_dynamic_tools: [...]}` as recall answers it. */
export function recallAnswer(...tools: DynamicToolInput[]): { _dynamic_tools: DynamicToolInput[] } {
  return { _dynamic_tools: tools };
}
