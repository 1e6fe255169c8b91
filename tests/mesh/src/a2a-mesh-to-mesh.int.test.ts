/**
 * Issue 26's end-to-end A2A case: an agent of one mesh calls an agent of a second mesh over A2A as a tool.
 * Mesh A's executor reads mesh B's Agent Card (with mesh B's API key from A's vault), streams the remote
 * task through B's A2A door, shows its progress as `tool_progress`, and hands B's answer to A's model as the
 * tool result. Both meshes are the real services on loopback; neither knows the other is a mesh.
 */
import type { TaskEvent } from '@agentmesh/protocol';
import { startScriptedModel, type ChatCompletionRequest, type ScriptedModel } from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, scriptedModel, sseEvents, storeModelKey, submit, taskStatus } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

const REMOTE_ANSWER = 'The ledger was closed on 3 March.';
const LOCAL_ANSWER = 'According to the finance agent, the ledger was closed on 3 March.';

let local: Mesh;
let remote: Mesh;
let localModel: ScriptedModel;
let remoteModel: ScriptedModel;

const hasToolResult = (request: ChatCompletionRequest) =>
  request.body.messages.some((message) => message.role === 'tool');

beforeAll(async () => {
  remoteModel = await startScriptedModel({ respond: () => ({ content: REMOTE_ANSWER }) });
  localModel = await startScriptedModel({
    respond: (request) =>
      hasToolResult(request)
        ? { content: LOCAL_ANSWER }
        : { toolCalls: [{ name: 'ask_finance', arguments: { message: 'When was the ledger closed?' } }] },
  });
  [local, remote] = await Promise.all([startMesh(), startMesh()]);

  // A2A callers submit as user `default`: mesh B's model key is stored for its whole account.
  await admin(remote, 'PUT', `/accounts/${MESH_ACCOUNT}/credentials/MODEL_KEY`, { value: 'model-key' });
  await admin(remote, 'POST', '/agents', {
    workflow_id: 'finance_agent',
    description: 'Answers questions about the books',
    model: scriptedModel(remoteModel.baseUrl),
  });

  await storeModelKey(local);
  // Mesh B's API key, as mesh A's tenant stores any credential: write-only, sealed into the task's vault.
  await admin(local, 'PUT', `/accounts/${MESH_ACCOUNT}/users/u1/credentials/FINANCE_MESH_KEY`, {
    value: remote.apiKey,
  });
  await admin(local, 'POST', '/tools', {
    type: 'A2A',
    name: 'ask_finance',
    card_url: `${remote.gatewayUrl}/a2a/finance_agent/.well-known/agent-card.json`,
    auth: { credential: 'FINANCE_MESH_KEY' },
  });
  await admin(local, 'POST', '/agents', {
    workflow_id: 'assistant',
    model: scriptedModel(localModel.baseUrl),
    tools: ['ask_finance'],
  });
}, 240_000);

afterAll(async () => {
  await Promise.all([local?.stop(), remote?.stop()]);
  await Promise.all([localModel?.stop(), remoteModel?.stop()]);
});

it("an agent calls another mesh's agent over A2A as a tool: the remote task runs there, its answer is the tool result, and the task ends done", async () => {
  const submitted = await submit(local, {
    workflow_id: 'assistant',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'Ask finance when the ledger was closed.' }],
  });
  expect(submitted.status).toBe(202);
  const { trace_id: traceId } = (await submitted.json()) as { trace_id: string };
  const events: TaskEvent[] = await sseEvents(local, traceId);

  expect(events.at(-1)).toMatchObject({ type: 'done', data: { message: LOCAL_ANSWER } });
  const result = events.find((event) => event.type === 'tool_result');
  expect(result).toMatchObject({ data: { tool: 'ask_finance', ok: true } });
  expect(JSON.stringify(result?.data)).toContain(REMOTE_ANSWER);

  // The remote task is a task of mesh B, in the account B's key belongs to, ended there.
  const progress = events.filter((event) => event.type === 'tool_progress');
  const remoteTaskId = progress
    .map((event) => (event.data as { remote_task_id?: string }).remote_task_id)
    .find((id) => id !== undefined);
  expect(remoteTaskId).toMatch(/^[0-9a-f]{32}$/);
  expect(await taskStatus(remote, remoteTaskId!)).toMatchObject({
    status: 'done',
    workflow_id: 'finance_agent',
    account_id: MESH_ACCOUNT,
  });
  // B's model was asked the question A's model put to the tool, and A's model got B's answer back.
  expect(JSON.stringify((remoteModel.requests.at(-1)?.body as { messages?: unknown })?.messages)).toContain(
    'When was the ledger closed?',
  );
  expect(JSON.stringify((localModel.requests.at(-1)?.body as { messages?: unknown })?.messages)).toContain(
    REMOTE_ANSWER,
  );
  // Mesh B's key went to mesh B only as a credential: never into A's events.
  expect(JSON.stringify(events)).not.toContain(remote.apiKey);
});
