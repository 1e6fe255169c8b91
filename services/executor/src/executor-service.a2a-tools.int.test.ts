// A2A agents as tools end to end in the executor: an in-process executor on real NATS, a scripted model, and
// a real A2A agent on loopback (the official SDK's server parts). The task carries the A2A tool as the
// assembler puts it (from the tool registry) with the agent's credential, a canary, in the sealed vault.
import { followTaskEvents } from '@agentmesh/bus';
import {
  isTerminalEvent,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  ToolDefinition,
  type TaskEvent,
} from '@agentmesh/protocol';
import type { RunningService } from '@agentmesh/runtime';
import {
  startNats,
  startScriptedModel,
  type ChatCompletionRequest,
  type NatsServer,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startA2aTestAgent, type A2aTestAgent } from './__fixtures__/a2a-agent.js';
import { recordWire, startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { toolResultsSoFar } from './__fixtures__/model-requests.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const CANARY = `canary-a2a-key-${crypto.randomUUID()}`;
const vaultKeys = generateVaultKeyPair('exec-a2a-test');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let model: ScriptedModel;
let agent: A2aTestAgent;
/** An agent that asks which day before it books: its task waits for input, then completes. */
let asking: A2aTestAgent;
const askingTurns: { taskId: string; text: string }[] = [];
let executor: RunningService;
let wire: { subject: string; text: string }[];
const logLines: string[] = [];
const offered: { name: string; description: string }[][] = [];

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  wire = recordWire(client);
  agent = await startA2aTestAgent({
    requireHeader: { name: 'authorization', value: `Bearer ${CANARY}` },
    skills: [{ id: 'book-trip', name: 'Book a trip', description: 'Books flights and hotels.' }],
    script: async (turn) => {
      // An agent that echoes what it was sent: the credential must come back redacted everywhere.
      turn.working(`checking flights (auth ${String(turn.headers.authorization)})`);
      turn.working('found one');
      turn.artifact('itinerary', [{ text: `Booked: ${turn.text}` }, { data: { price_eur: 420 } }]);
      turn.end('completed');
    },
  });
  asking = await startA2aTestAgent({
    requireHeader: { name: 'authorization', value: `Bearer ${CANARY}` },
    script: async (turn) => {
      askingTurns.push({ taskId: turn.taskId, text: turn.text });
      if (!/day/i.test(turn.text)) return turn.end('input-required', 'Which day do you fly?');
      turn.artifact('itinerary', [{ text: `Booked: Lisbon on ${turn.text}` }]);
      turn.end('completed');
    },
  });
  model = await startScriptedModel({
    respond: (request: ChatCompletionRequest) => {
      if (request.body.messages.some((m) => m.role === 'user' && m.content === ANSWERS_QUESTIONS)) {
        return answerTheRemoteQuestion(request);
      }
      offered.push(
        ((request.body.tools ?? []) as { function: { name: string; description: string } }[]).map((tool) => ({
          name: tool.function.name,
          description: tool.function.description,
        })),
      );
      if (toolResultsSoFar(request) === 0) {
        return {
          toolCalls: [{ id: 'call_trip', name: 'ask_travel', arguments: { message: 'Lisbon on Friday' } }],
        };
      }
      return { content: `travel agent said: ${String(request.body.messages.at(-1)?.content ?? '')}` };
    },
  });
  executor = await startInProcessExecutor({ natsUrl: nats.url, vaultKeys, logLines });
});

afterAll(async () => {
  await executor?.stop();
  await client?.drain();
  await Promise.all([model?.stop(), agent?.stop(), asking?.stop()]);
  await nats?.stop();
});

const ANSWERS_QUESTIONS = 'book Lisbon, and answer what the travel agent asks';

/** A model that calls the tool, answers the remote agent's question with `continue_task_id`, then answers. */
function answerTheRemoteQuestion(request: ChatCompletionRequest) {
  const results = request.body.messages.filter((m) => m.role === 'tool');
  if (results.length === 0) {
    return { toolCalls: [{ id: 'call_ask', name: 'ask_travel', arguments: { message: 'Lisbon' } }] };
  }
  const content = String(results.at(-1)?.content ?? '');
  // A failure reaches the model as JSON ({error: {code, message, detail}}); an answer as its text.
  const waiting = content.startsWith('{')
    ? (JSON.parse(content) as { error?: { detail?: { task_id?: string } } }).error?.detail?.task_id
    : undefined;
  if (waiting !== undefined) {
    const args = { message: 'Friday, the day after tomorrow', continue_task_id: waiting };
    return { toolCalls: [{ id: `call_answer_${results.length}`, name: 'ask_travel', arguments: args }] };
  }
  return { content: `travel agent said: ${content}` };
}

async function runTask(user: string, cardUrl = agent.cardUrl): Promise<TaskEvent[]> {
  const traceId = newTraceId();
  const task = assembledTask({
    traceId,
    accountId: ACCOUNT,
    modelBaseUrl: model.baseUrl,
    secrets: { [MODEL_API_KEY_VAULT_ENTRY]: 'model-key', TRAVEL_KEY: CANARY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: [
      ToolDefinition.parse({
        type: 'A2A',
        name: 'ask_travel',
        card_url: cardUrl,
        skill: 'book-trip',
        auth: { credential: 'TRAVEL_KEY' },
      }),
    ],
  });
  await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:assembled` });
  const events: TaskEvent[] = [];
  for await (const event of followTaskEvents(js, {
    accountId: ACCOUNT,
    traceId,
    signal: AbortSignal.timeout(30_000),
  })) {
    events.push(event);
    if (isTerminalEvent(event)) break;
  }
  return events;
}

describe('an agent calling a remote A2A agent as a tool', () => {
  it("ends done with the remote task's progress as tool_progress and its artifacts as the tool result, the credential never in clear", async () => {
    const events = await runTask('book me a trip');

    expect(offered[0]).toEqual([
      { name: 'ask_travel', description: 'Travel agent: Book a trip. Books flights and hotels.' },
    ]);
    const toolEvents = events.filter((event) =>
      ['tool_start', 'tool_progress', 'tool_result'].includes(event.type),
    );
    const remoteTask = { call_id: 'call_trip', tool: 'ask_travel', remote_task_id: expect.any(String) };
    expect(toolEvents.map((event) => [event.type, event.data])).toEqual([
      [
        'tool_start',
        { call_id: 'call_trip', tool: 'ask_travel', arguments: { message: 'Lisbon on Friday' } },
      ],
      [
        'tool_progress',
        { ...remoteTask, progress: 1, message: expect.stringContaining('the remote agent took the task') },
      ],
      ['tool_progress', { ...remoteTask, progress: 2, message: 'checking flights (auth Bearer [REDACTED])' }],
      ['tool_progress', { ...remoteTask, progress: 3, message: 'found one' }],
      [
        'tool_result',
        expect.objectContaining({
          call_id: 'call_trip',
          ok: true,
          result: 'Booked: Lisbon on Friday\n{"price_eur":420}',
        }),
      ],
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'travel agent said: Booked: Lisbon on Friday\n{"price_eur":420}' },
    });

    // The credential reached the agent, and nothing else: not the bus, not the log.
    expect(agent.calls.map((call) => call.headers.authorization)).toEqual([`Bearer ${CANARY}`]);
    expect(wire.length).toBeGreaterThan(0);
    expect(wire.filter((message) => message.text.includes(CANARY)).map((message) => message.subject)).toEqual(
      [],
    );
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.filter((line) => line.includes(CANARY))).toEqual([]);
  });

  it('when the remote agent asks for input, the model answers it with continue_task_id on the same remote task, which completes', async () => {
    const events = await runTask(ANSWERS_QUESTIONS, asking.cardUrl);

    const results = events.flatMap((event) => (event.type === 'tool_result' ? [event.data] : []));
    expect(results).toHaveLength(2);
    const [asked, answered] = results;
    expect(asked).toMatchObject({
      call_id: 'call_ask',
      ok: false,
      error: { message: expect.stringContaining('Which day do you fly?') },
    });
    const remoteTaskId = (asked as { error: { detail: { task_id: string } } }).error.detail.task_id;
    expect(answered).toMatchObject({ ok: true, result: 'Booked: Lisbon on Friday, the day after tomorrow' });
    expect(askingTurns).toEqual([
      { taskId: remoteTaskId, text: 'Lisbon' },
      { taskId: remoteTaskId, text: 'Friday, the day after tomorrow' },
    ]);
    expect(events.at(-1)).toMatchObject({
      type: 'done',
      data: { message: 'travel agent said: Booked: Lisbon on Friday, the day after tomorrow' },
    });
  });
});
