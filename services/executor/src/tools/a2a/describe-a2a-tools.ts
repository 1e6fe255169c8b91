// The step of a task's start that tells the model about its A2A tools from their Agent Cards, so the task
// runner stays one line away from it. Cards that cannot be read are logged (their tools keep the stored
// description, and their calls say why they fail).
import type { Logger } from '@agentmesh/runtime';
import type { ToolDefinition } from '@agentmesh/protocol';
import type { A2aTaskContext, A2aToolRunner } from './a2a-tool-runner.js';

export async function describeA2aTools(
  tools: ToolDefinition[],
  runner: A2aToolRunner | undefined,
  task: A2aTaskContext,
  log: Logger,
): Promise<ToolDefinition[]> {
  if (runner === undefined || !tools.some((tool) => tool.type === 'A2A')) return tools;
  const described = await runner.describe(tools, task);
  if (described.unread.length > 0) {
    log.warn(
      { unread: described.unread },
      'agent cards of A2A tools could not be read; their stored descriptions are used',
    );
  }
  return described.tools;
}
