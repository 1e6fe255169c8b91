/**
 * A parent agent waiting for its sub-task lends its executor slot out: on a mesh whose only executor has
 * one slot (MAX_CONCURRENT_TASKS=1), the parent's sub-task runs in the slot the parent lent, and the
 * parent answers with the sub-agent's answer. Before, the parent held the slot, the sub-task waited in the
 * queue, and the tree ended only at its deadline.
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, type ChatCompletionRequest, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, sseEvents, submit, taskStatus } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;

function systemPromptOf(request: ChatCompletionRequest): string {
  const system = request.body.messages.find((message) => message.role === 'system');
  return typeof system?.content === 'string' ? system.content : '';
}

beforeAll(async () => {
  model = await startScriptedModel({
    respond: (request) => {
      const last = request.body.messages.at(-1) as { role: string; content?: unknown };
      if (systemPromptOf(request) === 'PARENT') {
        if (last.role !== 'tool') {
          return { toolCalls: [{ name: 'agent_researcher', arguments: { input: 'what is the answer?' } }] };
        }
        return { content: `parent relays: ${String(last.content)}` };
      }
      if (systemPromptOf(request) === 'RESEARCHER') return { content: 'the answer is 42' };
      return undefined;
    },
  });
  mesh = await startMesh({ executors: 1, env: { executor: { MAX_CONCURRENT_TASKS: '1' } } });
  const agent = (workflowId: string, prompt: string, extra: Record<string, unknown>) =>
    admin(mesh, 'POST', '/agents', {
      workflow_id: workflowId,
      system_prompt: prompt,
      model: { model_name: 'scripted', base_url: model.baseUrl },
      ...extra,
    });
  await agent('researcher', 'RESEARCHER', { description: 'Researches facts' });
  await agent('parent', 'PARENT', { sub_agents: ['researcher'] });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
});

it("on an executor with one slot, a parent's sub-task runs in the slot the waiting parent lent, and the parent answers with its answer", async () => {
  const response = await submit(mesh, {
    workflow_id: 'parent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'ask your sub-agent' }],
    // Without the loan the sub-task could never run: the tree would end here, at its deadline.
    deadline: new Date(Date.now() + 60_000).toISOString(),
  });
  expect(response.status).toBe(202);
  const { trace_id: parentId } = (await response.json()) as { trace_id: string };

  const events = await sseEvents(mesh, parentId);
  const started = events.find((event) => event.type === 'subtask_started') as
    Extract<TaskEvent, { type: 'subtask_started' }> | undefined;
  expect(started).toBeDefined();
  expect(events.find((event) => event.type === 'subtask_finished')).toMatchObject({
    data: { status: 'done' },
  });
  expect(events.at(-1)).toMatchObject({ type: 'done' });
  expect((events.at(-1) as Extract<TaskEvent, { type: 'done' }>).data.message).toContain('the answer is 42');
  expect(await taskStatus(mesh, started!.data.subtask_trace_id)).toMatchObject({
    status: 'done',
    parent_trace_id: parentId,
  });
}, 120_000);
