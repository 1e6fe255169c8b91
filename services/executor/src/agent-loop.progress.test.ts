import type { NativeTool } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { runAgentLoop, type ProgressEvent, type ToolExecutionContext } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { TaskAbort } from './task-abort.js';

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.stop();
  model = undefined;
});

const slowTool: NativeTool = {
  type: 'NATIVE',
  name: 'slow',
  description: 'reports progress',
  parameters: { type: 'object', properties: {} },
  class_name: 'SlowTool',
};

describe('tool progress in the loop', () => {
  it('progress a running tool reports becomes tool_progress events between its tool_start and tool_result; a report after it finished is dropped', async () => {
    model = await startScriptedModel({
      script: [{ toolCalls: [{ id: 'call_slow', name: 'slow', arguments: {} }] }, { content: 'done' }],
    });
    let lateReport: ToolExecutionContext['onProgress'];
    const events: ProgressEvent[] = [];
    const outcome = await runAgentLoop(
      {
        model: { name: 'scripted-model' },
        messages: [{ role: 'user', content: 'go slowly' }],
        tools: [slowTool],
        maxSteps: 3,
      },
      {
        model: new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000, maxRetries: 0 }),
        executeTool: async (_tool, _args, ctx) => {
          ctx.onProgress?.({ progress: 1, total: 2 });
          ctx.onProgress?.({ progress: 2, total: 2, message: 'almost' });
          lateReport = ctx.onProgress;
          return { ok: true, result: 'slow done' };
        },
        emit: (event) => {
          if (event.type !== 'tool_call_delta') events.push(event);
        },
      },
      new TaskAbort().signal,
    );
    lateReport?.({ progress: 3 });

    expect(outcome.type).toBe('done');
    expect(
      events.filter((event) => event.type.startsWith('tool_')).map((event) => [event.type, event.data]),
    ).toEqual([
      ['tool_start', { call_id: 'call_slow', tool: 'slow', arguments: {} }],
      ['tool_progress', { call_id: 'call_slow', tool: 'slow', progress: 1, total: 2 }],
      ['tool_progress', { call_id: 'call_slow', tool: 'slow', progress: 2, total: 2, message: 'almost' }],
      ['tool_result', expect.objectContaining({ call_id: 'call_slow', ok: true, result: 'slow done' })],
    ]);
  });
});
