/**
 * The loop's opening with an output schema: the schema instruction the model is sent is reported as part
 * of the opening, so a thread's turn (taken after it) holds the run's own messages and never the instruction.
 */
import type { ChatMessage } from '@agentmesh/protocol';
import { startScriptedModel, type ScriptedModel } from '@agentmesh/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { runAgentLoop } from './agent-loop.js';
import { OpenAiChatClient } from './llm/index.js';
import { TaskAbort } from './task-abort.js';
import { NativeToolRegistry } from './tools/native/index.js';
import { DynamicToolRunner, HttpToolRunner } from './tools/index.js';
import { toolExecutor } from './tools/tool-dispatch.js';

let model: ScriptedModel | undefined;
let httpTools: HttpToolRunner | undefined;

afterEach(async () => {
  await Promise.all([model?.stop(), httpTools?.close()]);
  model = httpTools = undefined;
});

async function runWithSchema(messages: ChatMessage[]): Promise<{ sent: ChatMessage[]; run: ChatMessage[] }> {
  model = await startScriptedModel({ script: [{ content: '{"answer":"42"}' }] });
  httpTools = new HttpToolRunner({ guard: { allowHosts: ['127.0.0.1'] }, defaultTimeoutMs: 10_000 });
  let live: readonly ChatMessage[] = [];
  let opening = -1;
  const outcome = await runAgentLoop(
    {
      model: { name: 'scripted-model' },
      messages,
      tools: [],
      maxSteps: 3,
      outputSchema: { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] },
    },
    {
      model: new OpenAiChatClient({ baseUrl: model.baseUrl, timeoutMs: 10_000, maxRetries: 0 }),
      executeTool: toolExecutor(
        {
          http: httpTools,
          dynamic: new DynamicToolRunner({ client: httpTools.client }),
          native: new NativeToolRegistry(),
        },
        { vault: {}, account: { id: 'acme' } },
      ),
      emit: () => undefined,
      onConversation: (conversation, openingLength) => {
        live = conversation;
        opening = openingLength;
      },
    },
    new TaskAbort().signal,
  );
  expect(outcome.type).toBe('done');
  const sent = (model.requests[0]?.body as { messages: ChatMessage[] }).messages;
  return { sent, run: live.slice(opening) };
}

describe('the agent loop with an output schema', () => {
  it('when the task has no system message, the instruction the loop adds counts as opening, not as the run', async () => {
    const { sent, run } = await runWithSchema([{ role: 'user', content: 'the answer?' }]);
    expect(sent).toHaveLength(2);
    expect(sent[0]?.role).toBe('system');
    // The final answer is the outcome's (thread-turns appends it); nothing of the opening is left in the run.
    expect(run).toEqual([]);
  });

  it('when the task has a system message, the instruction joins it and the opening keeps its length', async () => {
    const { sent, run } = await runWithSchema([
      { role: 'system', content: 'You are a test agent.' },
      { role: 'user', content: 'the answer?' },
    ]);
    expect(sent).toHaveLength(2);
    expect(String(sent[0]?.content)).toContain('JSON Schema');
    expect(run).toEqual([]);
  });
});
