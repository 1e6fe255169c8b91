/**
 * The must-show of resuming from the event log: an executor process killed (SIGKILL) right after a tool's
 * `tool_result` is stored, while the model is still answering, leaves the task to the other executor,
 * which resumes from the task's events: the tool is not called again, and the task ends `done` there. A
 * client that appends `message_chunk`s and applies `attempt_started` reads exactly the final answer.
 */
import { MeshClient } from '@agentmesh/client';
import type { TaskEvent } from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, sseEvents, storeModelKey } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

const ANSWER = 'The payment of 5 went through.';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
/** Holds the model's first answer after the payment until the executor asking for it is dead. */
let releaseAnswer: () => void = () => {};
const answerHeld = new Promise<void>((resolve) => (releaseAnswer = resolve));

const lastRole = (body: unknown): string | undefined =>
  ((body as { messages?: { role: string }[] }).messages ?? []).at(-1)?.role;

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } }],
  });
  let answers = 0;
  model = await startScriptedModel({
    respond: (request) => {
      if (lastRole(request.body) !== 'tool') {
        return { toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { amount: '5' } }] };
      }
      answers += 1;
      // The first answer streams its first text (after the role chunk), then waits: the attempt dies mid-answer.
      return answers === 1
        ? { content: ANSWER, chunkSize: 8, hold: { afterChunks: 2, until: answerHeld } }
        : { content: ANSWER, chunkSize: 8 };
    },
  });
  mesh = await startMesh({
    executors: 2,
    // A quick takeover: the dead executor's delivery comes back after 2 s.
    env: { executor: { ACK_WAIT_MS: '2000', ACK_PROGRESS_MS: '500', PULL_EXPIRES_MS: '1000' } },
  });
  await storeModelKey(mesh);
  await registerQueryTool(mesh, {
    name: 'pay',
    description: 'pays an amount',
    url: `${api.url}/pay`,
    parameter: 'amount',
    type: 'string',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'paying_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['pay'],
  });
}, 180_000);

afterAll(async () => {
  releaseAnswer();
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

/** The answer a client reads: every `message_chunk` appended, without the text `attempt_started` voids. */
function appendedAnswer(events: readonly TaskEvent[]): string {
  const voided = new Set<number>();
  for (const marker of events) {
    if (marker.type !== 'attempt_started') continue;
    for (const event of events)
      if (event.seq > marker.data.drop_text_after_seq && event.seq < marker.seq) voided.add(event.seq);
  }
  return events
    .flatMap((event) => (event.type === 'message_chunk' && !voided.has(event.seq) ? [event.data.delta] : []))
    .join('');
}

it('an executor killed right after a tool_result is written: the other executor resumes, the tool is not called again, and the task ends done', async () => {
  const client = new MeshClient({ baseUrl: mesh.gatewayUrl, apiKey: mesh.apiKey });
  const task = await client.run({
    workflow_id: 'paying_agent',
    user_id: 'u1',
    messages: [{ role: 'user', content: 'pay 5' }],
  });
  const trace = task.trace_id;
  const received: TaskEvent[] = [];
  // A failure of the follow shows in the checks below; it must not outlive the test unhandled.
  const followed = (async () => {
    for await (const event of task.events) received.push(event);
  })().catch((error: unknown) => error);

  // Killed once the payment's result is stored and the model has begun its answer.
  await waitFor(() => received.some((event) => event.type === 'tool_result'), { timeoutMs: 30_000 });
  await waitFor(() => received.at(-1)?.type === 'message_chunk', { timeoutMs: 10_000 });
  const victim = await waitFor(
    () =>
      mesh.executors.find((executor) =>
        executor.logs.some((line) => line.trace_id === trace && line.msg === 'task attempt started'),
      ),
    { timeoutMs: 10_000 },
  );
  await victim.stop('SIGKILL');
  releaseAnswer();
  expect(await followed).toBeUndefined();

  const events = await sseEvents(mesh, trace);
  const done = events.at(-1);
  expect(done?.type, JSON.stringify(done)).toBe('done');
  expect(events.filter((event) => event.type === 'done' || event.type === 'error')).toHaveLength(1);
  expect(api.requests).toHaveLength(1);
  expect(api.requests[0]!.headers['idempotency-key']).toBe(`${trace}:call_pay`);
  const takeover = events.find((event) => event.type === 'attempt_started');
  expect(takeover).toMatchObject({
    data: { resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
  });
  expect(done!.attempt).toBe(takeover!.attempt);
  const survivor = mesh.executors.find((executor) => executor !== victim)!;
  expect(survivor.logs.some((line) => line.trace_id === trace)).toBe(true);
  if (done?.type !== 'done') return;
  expect(appendedAnswer(events)).toBe(done.data.message);
  expect(appendedAnswer(received)).toBe(done.data.message);
  expect(done.data.message).toBe(ANSWER);
}, 180_000);
