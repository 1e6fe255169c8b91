/**
 * The AG-UI door's must-show: `@ag-ui/client`'s HttpAgent runs a mesh agent whose turn makes two tool calls,
 * one of which waits for approval. The stream shows both calls with their arguments streamed, the run
 * finishes with an interrupt, a person approves through the task approvals API while the stream is open,
 * and a new run on the same stream carries the rest to the answer. HttpAgent applies AG-UI's verifier to
 * every event it reads, so an invalid sequence fails the run. Then the finished task is read again through
 * the task's GET from a Last-Event-ID in the middle, and the frames are exactly the tail of the whole.
 */
import { HttpAgent, type BaseEvent } from '@ag-ui/client';
import { SseParser } from '@agentmesh/sse';
import {
  startRecordingApi,
  startScriptedModel,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, storeModelKey } from './mesh-client.js';
import { startMesh, type Mesh } from './mesh-harness.js';

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;

interface ChatBody {
  messages?: { role: string; content?: string | null }[];
}

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [
      { method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } },
      { method: 'GET', path: '/rate', reply: { status: 200, body: { rate: 1.1 } } },
    ],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const messages = (request.body as ChatBody).messages ?? [];
      if (messages.at(-1)?.role !== 'tool') {
        return {
          toolCalls: [
            { id: 'call_rate', name: 'rate', arguments: { currency: 'EUR' } },
            { id: 'call_pay', name: 'pay', arguments: { amount: 5000 } },
          ],
          chunkSize: 3,
        };
      }
      return { content: 'Paid 5000 at rate 1.1.', chunkSize: 5 };
    },
  });
  // Every call streams its arguments, however short (the default holds back short ones).
  mesh = await startMesh({ executors: 1, env: { executor: { TOOL_ARGS_STREAM_MIN_CHARS: '0' } } });
  await storeModelKey(mesh);
  await registerQueryTool(mesh, {
    name: 'pay',
    description: 'pays an amount',
    url: `${api.url}/pay`,
    parameter: 'amount',
    type: 'number',
  });
  await registerQueryTool(mesh, {
    name: 'rate',
    description: 'an exchange rate',
    url: `${api.url}/rate`,
    parameter: 'currency',
    type: 'string',
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'ag_ui_agent',
    model: scriptedModel(model.baseUrl),
    tools: ['rate', 'pay'],
    tool_approvals: { pay: { reason: 'every payment' } },
  });
}, 180_000);

afterAll(async () => {
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

const field = (event: BaseEvent, name: string): unknown =>
  (event as unknown as Record<string, unknown>)[name];

it('when HttpAgent runs an agent with two tool calls and an approval, approved through the task API while the stream is open, the events are valid AG-UI and the answer arrives on the same stream', async () => {
  const agent = new HttpAgent({
    url: `${mesh.gatewayUrl}/v1/ag-ui/agents/ag_ui_agent`,
    headers: { authorization: `Bearer ${mesh.apiKey}` },
    threadId: 'ag-ui-thread-1',
  });
  agent.addMessage({ id: 'm1', role: 'user', content: 'pay 5000 in EUR' });
  const events: BaseEvent[] = [];
  const decisions: number[] = [];
  const failures: unknown[] = [];
  await agent.runAgent(
    // The user whose credentials the task reads (the model key is u1's).
    { runId: 'run-one', forwardedProps: { agentmesh: { user_id: 'u1' } } },
    {
      onEvent: ({ event }) => {
        events.push(event);
      },
      onRunFailed: ({ error }) => {
        failures.push(error);
      },
      onRunFinishedEvent: async (finished) => {
        if (finished.outcome !== 'interrupt') return;
        for (const interrupt of finished.interrupts) {
          const traceId = (interrupt.metadata?.['agentmesh'] as { trace_id: string }).trace_id;
          const answer = await fetch(
            `${mesh.gatewayUrl}/v1/tasks/${traceId}/approvals/${interrupt.toolCallId}`,
            {
              method: 'POST',
              headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
              body: JSON.stringify({ approve: true }),
            },
          );
          decisions.push(answer.status);
        }
      },
    },
  );

  const types = events.map((event) => event.type);
  expect(failures).toEqual([]);
  expect(decisions).toEqual([200]);
  expect(types[0]).toBe('RUN_STARTED');
  expect(types.filter((type) => type === 'RUN_STARTED')).toHaveLength(2);
  const finishes = events.filter((event) => event.type === 'RUN_FINISHED');
  expect(finishes.map((event) => (field(event, 'outcome') as { type: string }).type)).toEqual([
    'interrupt',
    'success',
  ]);
  expect(field(finishes[1]!, 'result')).toMatchObject({ text: 'Paid 5000 at rate 1.1.' });
  const argsOf = (id: string) =>
    events
      .filter((event) => event.type === 'TOOL_CALL_ARGS' && field(event, 'toolCallId') === id)
      .map((event) => field(event, 'delta'))
      .join('');
  // Streamed in pieces (tool_call_delta), they add up to the arguments.
  // More pieces than calls: the first call's first piece leaves at once, the rest when the second starts.
  expect(events.filter((event) => event.type === 'TOOL_CALL_ARGS').length).toBeGreaterThan(2);
  expect(argsOf('call_rate')).toBe(JSON.stringify({ currency: 'EUR' }));
  expect(argsOf('call_pay')).toBe(JSON.stringify({ amount: 5000 }));
  const results = events.filter((event) => event.type === 'TOOL_CALL_RESULT');
  expect(results.map((event) => field(event, 'toolCallId'))).toEqual(['call_rate', 'call_pay']);
  expect(api.requests.filter((request) => request.path === '/pay')).toHaveLength(1);
  expect(types.filter((type) => type === 'TEXT_MESSAGE_CONTENT').length).toBeGreaterThan(1);
  // The agent's own view: the answer as an assistant message, and the calls with their results.
  expect(
    agent.messages.some(
      (message) => message.role === 'assistant' && message.content === 'Paid 5000 at rate 1.1.',
    ),
  ).toBe(true);
  expect(agent.messages.filter((message) => message.role === 'tool')).toHaveLength(2);

  // The run's thread is a mesh thread now, holding the turn.
  const thread = await fetch(`${mesh.gatewayUrl}/v1/threads/ag-ui-thread-1`, {
    headers: { authorization: `Bearer ${mesh.apiKey}` },
  });
  expect(thread.status).toBe(200);

  // Resuming: the finished task again through its GET, whole and from a frame in the middle.
  const traceId = (
    finishes[0] as unknown as { outcome: { interrupts: { metadata: { agentmesh: { trace_id: string } } }[] } }
  ).outcome.interrupts[0]!.metadata.agentmesh.trace_id;
  const frames = async (lastEventId?: string) => {
    const response = await fetch(`${mesh.gatewayUrl}/v1/ag-ui/tasks/${traceId}/events?run_id=run-one`, {
      headers: {
        authorization: `Bearer ${mesh.apiKey}`,
        ...(lastEventId === undefined ? {} : { 'last-event-id': lastEventId }),
      },
    });
    expect(response.status).toBe(200);
    const parser = new SseParser();
    return [...parser.push(await response.text()), ...parser.end()].map((message) => ({
      id: message.id,
      data: message.data,
    }));
  };
  const whole = await frames();
  expect(whole.map((frame) => (JSON.parse(frame.data) as BaseEvent).type)).toEqual(types);
  const cut = Math.floor(whole.length / 2);
  const tail = await frames(whole[cut]!.id);
  expect(tail).toEqual(whole.slice(cut + 1));
}, 120_000);

it('when the client asks the stream to stop at an interrupt, the run ends there, and a second run whose resume approves it continues the task to its answer', async () => {
  const agent = new HttpAgent({
    url: `${mesh.gatewayUrl}/v1/ag-ui/agents/ag_ui_agent`,
    headers: { authorization: `Bearer ${mesh.apiKey}` },
    threadId: 'ag-ui-thread-2',
  });
  agent.addMessage({ id: 'm1', role: 'user', content: 'pay 5000 in EUR' });
  const forwardedProps = { agentmesh: { user_id: 'u1', stop_at_interrupt: true } };
  const first: BaseEvent[] = [];
  await agent.runAgent(
    { runId: 'first', forwardedProps },
    { onEvent: ({ event }) => void first.push(event) },
  );
  expect(first.at(-1)).toMatchObject({ type: 'RUN_FINISHED', outcome: { type: 'interrupt' } });
  expect(agent.pendingInterrupts.map((interrupt) => interrupt.toolCallId)).toEqual(['call_pay']);
  const paidBefore = api.requests.filter((request) => request.path === '/pay').length;

  const second: BaseEvent[] = [];
  await agent.runAgent(
    {
      runId: 'second',
      forwardedProps,
      resume: [
        { interruptId: agent.pendingInterrupts[0]!.id, status: 'resolved', payload: { comment: 'ok' } },
      ],
    },
    { onEvent: ({ event }) => void second.push(event) },
  );
  expect(second[0]?.type).toBe('RUN_STARTED');
  expect(second.at(-1)).toMatchObject({
    type: 'RUN_FINISHED',
    outcome: { type: 'success' },
    result: { text: 'Paid 5000 at rate 1.1.' },
  });
  expect(
    second.filter((event) => event.type === 'TOOL_CALL_RESULT').map((event) => field(event, 'toolCallId')),
  ).toEqual(['call_pay']);
  expect(api.requests.filter((request) => request.path === '/pay')).toHaveLength(paidBefore + 1);
  expect(agent.pendingInterrupts).toEqual([]);
}, 120_000);
