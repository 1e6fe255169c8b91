// The A2A tool runner against a real A2A agent on loopback (the official SDK's server parts, see
// __fixtures__/a2a-agent.ts): card discovery through the SSRF guard, a streamed remote task whose progress
// and artifacts come back, cancel and timeout reaching the remote task, remote failures as tool errors, and
// the vault's credential reaching that agent only, never in what the model or the events see.
import { ToolDefinition, type A2aTool } from '@agentmesh/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import {
  startA2aTestAgent,
  type A2aTestAgent,
  type A2aTestAgentOptions,
} from '../../__fixtures__/a2a-agent.js';
import { SecretScrubber } from '../../secrets/index.js';
import { AbortCause, TaskAbortReason } from '../../task-abort.js';
import { OutboundGuard } from '../http/outbound-guard.js';
import { A2A_SKILL_METADATA, A2aToolRunner } from './a2a-tool-runner.js';
import { RemoteInputRequests } from './remote-input-requests.js';

const CANARY = `canary-a2a-${crypto.randomUUID()}`;
const vault = { TRAVEL_KEY: CANARY };

let agent: A2aTestAgent | undefined;
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
});

function runner(options: { defaultTimeoutMs?: number; maxResultBytes?: number } = {}): A2aToolRunner {
  const guard = new OutboundGuard({ allowHosts: ['127.0.0.1'] });
  return new A2aToolRunner({
    guard,
    dispatcher: guard.createAgent(),
    defaultTimeoutMs: options.defaultTimeoutMs ?? 20_000,
    maxResultBytes: options.maxResultBytes ?? 64 * 1024,
    cards: { maxBytes: 64 * 1024, ttlMs: 60_000, timeoutMs: 5_000 },
  });
}

function a2aTool(cardUrl: string, extra: Partial<A2aTool> = {}): A2aTool {
  const parsed = ToolDefinition.parse({ type: 'A2A', name: 'ask_travel', card_url: cardUrl, ...extra });
  if (parsed.type !== 'A2A') throw new Error('not an A2A tool');
  return parsed;
}

async function start(options: A2aTestAgentOptions): Promise<A2aTestAgent> {
  agent = await startA2aTestAgent({
    skills: [
      {
        id: 'book-trip',
        name: 'Book a trip',
        description: 'Books flights and hotels.',
        examples: ['Fly me to Lisbon on Friday'],
      },
    ],
    ...options,
  });
  return agent;
}

interface Run {
  progress: { progress: number; message?: string; remote_task_id?: string }[];
  signal?: AbortSignal;
  onProgress?: (message: string | undefined) => void;
  callId?: string;
  remoteInputs?: RemoteInputRequests;
}

function call(
  tool: A2aTool,
  args: Record<string, unknown>,
  run: Run,
  a2a = runner(),
  task: { account: string; vault: Record<string, string> } = { account: 'acme', vault },
) {
  return a2a.run(tool, args, {
    vault: task.vault,
    account: task.account,
    scrubber: new SecretScrubber(Object.values(task.vault)),
    callId: run.callId ?? 'call_1',
    idempotencyKey: `trace-1:${run.callId ?? 'call_1'}`,
    signal: run.signal ?? new AbortController().signal,
    ...(run.remoteInputs === undefined ? {} : { remoteInputs: run.remoteInputs }),
    onProgress: (progress) => {
      run.progress.push(progress);
      run.onProgress?.(progress.message);
    },
  });
}

describe('A2aToolRunner', () => {
  it('when the remote task streams progress and artifacts, progress comes back in order and the artifacts are the result', async () => {
    const turns: { text: string; metadata: unknown }[] = [];
    const remote = await start({
      script: async (turn) => {
        turns.push({ text: turn.text, metadata: turn.metadata });
        turn.working('looking up flights');
        turn.working('comparing prices');
        turn.artifact('itinerary', [{ text: 'Fly LH123 on Friday' }, { data: { price_eur: 420 } }]);
        turn.end('completed');
      },
    });
    const run: Run = { progress: [] };
    const outcome = await call(
      a2aTool(remote.cardUrl, { skill: 'book-trip' }),
      { message: 'Lisbon, Friday' },
      run,
    );

    expect(outcome).toEqual({ ok: true, result: 'Fly LH123 on Friday\n{"price_eur":420}' });
    // First the remote task's id (what a taking-over attempt follows), then each status message.
    const taskId = run.progress[0]?.remote_task_id;
    expect(taskId).toEqual(expect.any(String));
    expect(run.progress).toEqual([
      { progress: 1, message: `the remote agent took the task (${taskId})`, remote_task_id: taskId },
      { progress: 2, message: 'looking up flights', remote_task_id: taskId },
      { progress: 3, message: 'comparing prices', remote_task_id: taskId },
    ]);
    expect(turns).toEqual([
      {
        text: 'Lisbon, Friday',
        metadata: expect.objectContaining({ [A2A_SKILL_METADATA]: 'book-trip' }),
      },
    ]);
    expect(remote.calls.map((entry) => entry.method)).toEqual(['SendStreamingMessage']);
  });

  it('when the stream breaks off mid-task, the runner subscribes to the remote task again and gets its end', async () => {
    const remote = await start({
      dropStreamAfter: 2,
      script: async (turn) => {
        turn.working('first leg');
        await turn.resubscribed;
        turn.working('second leg');
        turn.artifact('itinerary', [{ text: 'both legs booked' }]);
        turn.end('completed');
      },
    });
    const run: Run = { progress: [] };
    const outcome = await call(a2aTool(remote.cardUrl), { message: 'two legs' }, run);

    expect(outcome).toEqual({ ok: true, result: 'both legs booked' });
    expect(remote.calls.map((entry) => entry.method)).toEqual(['SendStreamingMessage', 'SubscribeToTask']);
    expect(run.progress.map((entry) => entry.message)).toEqual([
      expect.stringContaining('the remote agent took the task'),
      'first leg',
      'second leg',
    ]);
  });

  it('when an attempt hands its task on mid-call, the remote task runs on and the next attempt follows it without sending again', async () => {
    const remote = await start({
      script: async (turn) => {
        turn.working('first leg');
        await turn.resubscribed;
        turn.working('second leg');
        turn.artifact('itinerary', [{ text: 'both legs booked' }]);
        turn.end('completed');
      },
    });
    const a2a = runner();
    const tool = a2aTool(remote.cardUrl);
    const stopping = new AbortController();
    const first: Run = {
      progress: [],
      signal: stopping.signal,
      onProgress: (message) => {
        if (message === 'first leg') {
          stopping.abort(new TaskAbortReason(AbortCause.EXECUTOR_STOPPING, 'the executor is stopping'));
        }
      },
    };
    const stopped = await call(tool, { message: 'two legs' }, first, a2a);
    expect(stopped).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect(remote.cancels).toEqual([]);

    // The next attempt: the call's remote task id, as its tool_progress events stored it.
    const remoteTaskId = first.progress.at(-1)?.remote_task_id;
    expect(remoteTaskId).toEqual(expect.any(String));
    const second: Run = { progress: [] };
    const resumed = await a2a.run(
      tool,
      { message: 'two legs' },
      {
        vault,
        account: 'acme',
        scrubber: new SecretScrubber([]),
        callId: 'call_1',
        idempotencyKey: 'trace-1:call_1',
        ...(remoteTaskId === undefined ? {} : { remoteTaskId }),
        signal: new AbortController().signal,
        onProgress: (progress) => second.progress.push(progress),
      },
    );

    expect(resumed).toEqual({ ok: true, result: 'both legs booked' });
    expect(remote.calls.map((entry) => entry.method)).toEqual(['SendStreamingMessage', 'SubscribeToTask']);
    expect(second.progress.map((entry) => entry.message)).toEqual(['second leg']);
  });

  it("when the agent no longer knows the earlier attempt's remote task, the next attempt sends the message anew", async () => {
    const remote = await start({
      script: async (turn) => {
        turn.artifact('answer', [{ text: `fresh: ${turn.text}` }]);
        turn.end('completed');
      },
    });
    const outcome = await runner().run(
      a2aTool(remote.cardUrl),
      { message: 'again' },
      {
        vault,
        account: 'acme',
        scrubber: new SecretScrubber([]),
        callId: 'call_1',
        remoteTaskId: 'a-task-this-agent-never-had',
        signal: new AbortController().signal,
      },
    );
    expect(outcome).toEqual({ ok: true, result: 'fresh: again' });
    expect(remote.calls.map((entry) => entry.method)).toEqual([
      'SubscribeToTask',
      'GetTask',
      'SendStreamingMessage',
    ]);
  });

  it('when the task is cancelled mid-call, the remote task gets CancelTask before the call returns CANCELLED', async () => {
    const remote = await start({
      script: async (turn) => {
        turn.working('started');
        await turn.cancelled;
      },
    });
    const abort = new AbortController();
    const run: Run = { progress: [], signal: abort.signal, onProgress: () => abort.abort() };
    const outcome = await call(a2aTool(remote.cardUrl), { message: 'book it' }, run);

    expect(outcome).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect(remote.cancels).toHaveLength(1);
    expect(remote.calls.map((entry) => entry.method)).toContain('CancelTask');
  });

  it('when the call outlives its timeout, the remote task is cancelled and the call fails TOOL_TIMEOUT', async () => {
    const remote = await start({
      script: async (turn) => {
        turn.working('started');
        await turn.cancelled;
      },
    });
    const outcome = await call(
      a2aTool(remote.cardUrl, { timeout_ms: 300 }),
      { message: 'wait' },
      { progress: [] },
    );

    expect(outcome).toMatchObject({ ok: false, error: { code: 'TOOL_TIMEOUT' } });
    expect(remote.cancels).toHaveLength(1);
  });

  it.each([
    ['failed', 'TOOL_ERROR', 'failed: the flight API is down'],
    ['rejected', 'TOOL_ERROR', 'rejected the task: the flight API is down'],
    ['input-required', 'TOOL_ERROR', 'needs more input: the flight API is down'],
    ['auth-required', 'UNAUTHORIZED', 'asks for authentication: the flight API is down'],
  ] as const)(
    'when the remote task ends %s, the call is a %s tool error that says so',
    async (state, code, says) => {
      const remote = await start({
        script: async (turn) => {
          turn.working('trying');
          turn.end(state, 'the flight API is down');
        },
      });
      const outcome = await call(a2aTool(remote.cardUrl), { message: 'book it' }, { progress: [] });

      expect(outcome.ok).toBe(false);
      if (outcome.ok) return;
      expect(outcome.error.code).toBe(code);
      expect(outcome.error.message).toContain(says);
      expect(outcome.error.detail).toMatchObject({ task_id: expect.any(String), state });
    },
  );

  it('when the remote task asks for input, a later call naming it in continue_task_id sends the answer to that same task, which completes', async () => {
    const turns: { taskId: string; text: string }[] = [];
    const remote = await start({
      script: async (turn) => {
        turns.push({ taskId: turn.taskId, text: turn.text });
        if (turns.length === 1) return turn.end('input-required', 'Which day do you fly?');
        turn.artifact('itinerary', [{ text: `Booked for ${turn.text}` }]);
        turn.end('completed');
      },
    });
    const tool = a2aTool(remote.cardUrl);
    const remoteInputs = new RemoteInputRequests();
    const args = { message: 'Lisbon, please' };

    const asked = await call(tool, args, { progress: [], callId: 'call_1', remoteInputs });
    if (asked.ok) throw new Error('the remote agent was expected to ask for input');
    const detail = asked.error.detail as { task_id: string; state: string; context_id?: string };
    expect(detail).toMatchObject({ state: 'input-required', context_id: expect.any(String) });
    expect(asked.error.message).toContain('Which day do you fly?');
    expect(asked.error.message).toContain(`continue_task_id "${detail.task_id}"`);
    remoteInputs.note(tool.name, args, asked);

    const answered = await call(
      tool,
      { message: 'Friday', continue_task_id: detail.task_id },
      { progress: [], callId: 'call_2', remoteInputs },
    );
    expect(answered).toEqual({ ok: true, result: 'Booked for Friday' });
    expect(turns).toEqual([
      { taskId: detail.task_id, text: 'Lisbon, please' },
      { taskId: detail.task_id, text: 'Friday' },
    ]);
  });

  it('a continue_task_id that names no remote task of this tool waiting for input is refused before anything reaches the agent', async () => {
    const remote = await start({ script: async (turn) => turn.end('completed') });
    const tool = a2aTool(remote.cardUrl);
    // Waiting for input, but from a call of another tool (another agent, another credential).
    const remoteInputs = new RemoteInputRequests(new Map([['task-of-another-tool', { tool: 'ask_bank' }]]));

    for (const named of ['task-of-another-tool', 'a-guessed-task-id', 42]) {
      const outcome = await call(
        tool,
        { message: 'go on', continue_task_id: named },
        { progress: [], remoteInputs },
      );
      expect(outcome).toMatchObject({ ok: false, error: { code: 'INVALID_REQUEST' } });
    }
    expect(remote.cardFetches).toEqual([]);
    expect(remote.calls).toEqual([]);
  });

  it('when the tool has a credential, it reaches the agent as a bearer token and never shows in progress or result', async () => {
    const remote = await start({
      requireHeader: { name: 'authorization', value: `Bearer ${CANARY}` },
      script: async (turn) => {
        turn.working(`you sent ${String(turn.headers.authorization)}`);
        turn.artifact('echo', [{ text: `header was ${String(turn.headers.authorization)}` }]);
        turn.end('completed');
      },
    });
    const run: Run = { progress: [] };
    const outcome = await call(
      a2aTool(remote.cardUrl, { auth: { credential: 'TRAVEL_KEY' } }),
      { message: 'hi' },
      run,
    );

    expect(outcome).toEqual({ ok: true, result: 'header was Bearer [REDACTED]' });
    expect(run.progress.map((entry) => entry.message)).toEqual([
      expect.stringContaining('the remote agent took the task'),
      'you sent Bearer [REDACTED]',
    ]);
    expect(JSON.stringify([outcome, run.progress])).not.toContain(CANARY);
    expect(remote.cardFetches.map((headers) => headers.authorization)).toEqual([`Bearer ${CANARY}`]);
    expect(remote.calls.map((entry) => entry.headers.authorization)).toEqual([`Bearer ${CANARY}`]);
  });

  it('when the tool names a header, the credential goes in that header as is', async () => {
    const remote = await start({
      requireHeader: { name: 'x-api-key', value: CANARY },
      script: async (turn) => {
        turn.artifact('ok', [{ text: 'in' }]);
        turn.end('completed');
      },
    });
    const outcome = await call(
      a2aTool(remote.cardUrl, { auth: { credential: 'TRAVEL_KEY', header: 'X-Api-Key' } }),
      { message: 'hi' },
      { progress: [] },
    );
    expect(outcome).toEqual({ ok: true, result: 'in' });
    expect(remote.calls[0]?.headers.authorization).toBeUndefined();
  });

  it.each([
    ['its card', false],
    ['its calls', true],
  ])(
    'when the agent refuses the credential on %s, the call is an UNAUTHORIZED tool error',
    async (_where, publicCard) => {
      const remote = await start({
        requireHeader: { name: 'authorization', value: 'Bearer something-else' },
        publicCard,
        script: async (turn) => turn.end('completed'),
      });
      const outcome = await call(
        a2aTool(remote.cardUrl, { auth: { credential: 'TRAVEL_KEY' } }),
        { message: 'hi' },
        { progress: [] },
      );
      expect(outcome).toMatchObject({ ok: false, error: { code: 'UNAUTHORIZED' } });
      expect(JSON.stringify(outcome)).not.toContain(CANARY);
    },
  );

  it('when the vault lacks the credential, the call fails CREDENTIALS_MISSING without reaching the agent', async () => {
    const remote = await start({ script: async (turn) => turn.end('completed') });
    const outcome = await call(
      a2aTool(remote.cardUrl, { auth: { credential: 'OTHER_KEY' } }),
      { message: 'hi' },
      { progress: [] },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'CREDENTIALS_MISSING' } });
    expect(remote.cardFetches).toHaveLength(0);
  });

  it('when the card URL is a host the guard does not allow, the call is FORBIDDEN before any connection', async () => {
    const outcome = await call(
      a2aTool('http://169.254.169.254/.well-known/agent-card.json'),
      { message: 'hi' },
      { progress: [] },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
  });

  it('when the card sends calls to a host the guard does not allow, the call is FORBIDDEN and nothing is sent', async () => {
    const remote = await start({
      interfaceUrl: () => 'http://10.255.0.1:9/a2a',
      script: async (turn) => turn.end('completed'),
    });
    const outcome = await call(a2aTool(remote.cardUrl), { message: 'hi' }, { progress: [] });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(remote.calls).toHaveLength(0);
  });

  it("when the card sends calls to another origin, the tool's credential is not sent there", async () => {
    const remote = await start({
      interfaceUrl: (base) => `${base.replace('127.0.0.1', 'localhost')}/a2a`,
      script: async (turn) => turn.end('completed'),
    });
    const outcome = await call(
      a2aTool(remote.cardUrl, { auth: { credential: 'TRAVEL_KEY' } }),
      { message: 'hi' },
      { progress: [] },
    );
    expect(outcome).toMatchObject({ ok: false, error: { code: 'FORBIDDEN' } });
    expect(remote.calls).toHaveLength(0);
  });

  it('when the card is larger than the limit, it is refused and nothing is sent to the agent', async () => {
    const remote = await start({
      cardExtra: { padding: 'x'.repeat(100 * 1024) },
      script: async (turn) => turn.end('completed'),
    });
    const outcome = await call(a2aTool(remote.cardUrl), { message: 'hi' }, { progress: [] });
    expect(outcome).toMatchObject({ ok: false, error: { code: 'SERVICE_UNAVAILABLE' } });
    if (!outcome.ok) expect(outcome.error.message).toContain('larger than 65536 bytes');
    expect(remote.calls).toHaveLength(0);
  });

  it('reads a card once per account and credential while it is fresh', async () => {
    const remote = await start({ script: async (turn) => turn.end('completed', 'ok') });
    const a2a = runner();
    const tool = a2aTool(remote.cardUrl, { auth: { credential: 'TRAVEL_KEY' } });
    await call(tool, { message: 'one' }, { progress: [] }, a2a);
    await call(tool, { message: 'two' }, { progress: [] }, a2a);
    expect(remote.cardFetches).toHaveLength(1);
    await call(tool, { message: 'other user' }, { progress: [] }, a2a, {
      account: 'acme',
      vault: { TRAVEL_KEY: 'another-users-key' },
    });
    await call(tool, { message: 'other account' }, { progress: [] }, a2a, { account: 'globex', vault });
    expect(remote.cardFetches.map((headers) => headers.authorization)).toEqual([
      `Bearer ${CANARY}`,
      'Bearer another-users-key',
      `Bearer ${CANARY}`,
    ]);
  });

  it("describes the tool from the card: the named skill's description and examples, a message parameter, and continue_task_id to answer a remote task waiting for input", async () => {
    const remote = await start({ script: async (turn) => turn.end('completed') });
    const described = await runner().describe([a2aTool(remote.cardUrl, { skill: 'book-trip' })], {
      vault,
      account: 'acme',
      scrubber: new SecretScrubber([]),
    });
    expect(described.unread).toEqual([]);
    expect(described.tools[0]).toMatchObject({
      description: 'Travel agent: Book a trip. Books flights and hotels.',
      parameters: {
        type: 'object',
        required: ['message'],
        properties: {
          message: { type: 'string', description: expect.stringContaining('Fly me to Lisbon on Friday') },
          continue_task_id: {
            type: 'string',
            description: expect.stringContaining('stopped to ask for more input'),
          },
        },
      },
    });
  });
});
