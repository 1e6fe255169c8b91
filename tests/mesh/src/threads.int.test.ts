/**
 * Threads end to end, on real NATS with the services as processes: two gateways, two executors.
 * - Each double-text strategy with concurrent submissions through both gateways: the thread's runs, read
 *   from the thread's own event stream (`GET /v1/threads/{id}/events`, ids = MESH_EVENTS sequence), never
 *   overlap (a run's terminal event comes before the next run's first event), and the thread keeps the
 *   turns the strategy promises.
 * - A three-turn conversation across both gateways, with NATS killed and restarted between turns and the
 *   executor of turn 2 SIGKILLed while the model writes its answer: the thread holds exactly the three
 *   turns, once each, and turn 3's model call sees the first two after the system prompt.
 * - Retention: a thread keeping its last turn (or its last second) gives the next run no older turn, lists
 *   none and purges them; a thread without retention beside it keeps everything; bad values are a 400.
 * - Compaction of turns with tool calls never leaves a tool result without its call, or a call without its
 *   result, in what the model receives.
 * - Following a thread over SSE, broken off and resumed with Last-Event-ID across two runs: exactly the
 *   events after that id, none missing, none twice.
 */
import { MeshClient, type ThreadEvent } from '@agentmesh/client';
import {
  estimateTokens,
  Streams,
  threadEntriesSubject,
  type ChatMessage,
  type ThreadReply,
} from '@agentmesh/protocol';
import {
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, registerQueryTool, scriptedModel, sseEvents, storeModelKey } from './mesh-client.js';
import { MESH_ACCOUNT, startMesh, type Mesh } from './mesh-harness.js';

interface Body {
  messages?: { role: string; content?: unknown }[];
}

let mesh: Mesh;
let model: ScriptedModel;
let api: RecordingApi;
let clients: MeshClient[];
/** Held answers, by the user message they answer; resolved by the test (or at the end). */
const gates = new Map<string, { open: () => void; opened: Promise<void> }>();
function gate(key: string): { open: () => void; opened: Promise<void> } {
  let entry = gates.get(key);
  if (entry === undefined) {
    let open!: () => void;
    const opened = new Promise<void>((resolve) => (open = resolve));
    entry = { open, opened };
    gates.set(key, entry);
  }
  return entry;
}
/** User messages whose held answer the model has begun. */
const holding = new Set<string>();
/** How many times the model was asked for turn 2's answer (the first attempt is held, then killed). */
let turnTwoAnswers = 0;

const lastUser = (body: Body): string => {
  const user = (body.messages ?? []).filter((m) => m.role === 'user').at(-1);
  return typeof user?.content === 'string' ? user.content : '';
};

beforeAll(async () => {
  api = await startRecordingApi({
    routes: [{ method: 'GET', path: '/pay', reply: { status: 200, body: { paid: true } } }],
  });
  model = await startScriptedModel({
    respond: (request) => {
      const body = request.body as Body;
      const text = lastUser(body);
      const afterTool = body.messages?.at(-1)?.role === 'tool';
      const first = body.messages?.[0];
      if (typeof first?.content === 'string' && first.content.startsWith('Summarise the conversation')) {
        const transcript = JSON.stringify(body.messages);
        return transcript.includes('sumfail') ? { fault: 'server_error' } : { content: 'SUMMARY-OF-EARLIER' };
      }
      const [tag] = text.split(':');
      if (text === 'conv:2') {
        if (!afterTool) return { toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { amount: '2' } }] };
        turnTwoAnswers += 1;
        if (turnTwoAnswers === 1) {
          holding.add(text);
          return { content: 'A2 paid.', chunkSize: 2, hold: { afterChunks: 2, until: gate(text).opened } };
        }
        return { content: 'A2 paid.' };
      }
      // Compaction with tools: every `tc:<n>` turn calls the tool (an id of its own), then answers.
      if (tag === 'tc') {
        if (!afterTool) {
          return { toolCalls: [{ id: `call_tc_${text.slice(3)}`, name: 'pay', arguments: { amount: '3' } }] };
        }
        return { content: `paid for ${text}` };
      }
      if (tag === 'conv') return { content: `A${text.slice(5)}` };
      // Strategies: `<strategy>:first` calls the tool, then holds its answer until its gate opens.
      if (text.endsWith(':first') && !afterTool && (tag === 'interrupt' || tag === 'rollback')) {
        return { toolCalls: [{ id: 'call_first', name: 'pay', arguments: { amount: '1' } }] };
      }
      if (text.endsWith(':first')) {
        holding.add(text);
        return {
          content: `answer to ${text}`,
          chunkSize: 2,
          hold: { afterChunks: 1, until: gate(text).opened },
        };
      }
      return { content: `answer to ${text}` };
    },
  });
  mesh = await startMesh({
    executors: 2,
    gateways: 2,
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
    workflow_id: 'chat',
    system_prompt: 'You are terse.',
    model: scriptedModel(model.baseUrl),
    tools: ['pay'],
  });
  await admin(mesh, 'POST', '/agents', {
    workflow_id: 'broken_chat',
    model: scriptedModel(model.baseUrl),
    tools: ['no_such_tool'],
  });
  clients = mesh.gatewayUrls.map((baseUrl) => new MeshClient({ baseUrl, apiKey: mesh.apiKey }));
}, 240_000);

afterAll(async () => {
  for (const entry of gates.values()) entry.open();
  await mesh?.stop();
  await model?.stop();
  await api?.stop();
});

/** POST /v1/tasks on gateway `index` for the thread; the raw response. */
async function say(index: number, threadId: string, text: string, extra: Record<string, unknown> = {}) {
  const response = await fetch(`${mesh.gatewayUrls[index]}/v1/tasks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      workflow_id: 'chat',
      user_id: 'u1',
      messages: [{ role: 'user', content: text }],
      thread_id: threadId,
      ...extra,
    }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function finalStatus(traceId: string): Promise<string> {
  return waitFor(
    async () => {
      const status = await clients[0]!.status(traceId).catch(() => undefined);
      return status && ['done', 'error', 'cancelled'].includes(status.status) ? status.status : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 200, description: `task ${traceId} to end` },
  );
}

/** Every event of the thread's runs, read from the thread's stream until each run has its terminal event. */
async function threadEvents(threadId: string, runs: readonly string[]): Promise<ThreadEvent[]> {
  const seen: ThreadEvent[] = [];
  const stop = new AbortController();
  const ended = new Set<string>();
  try {
    for await (const item of clients[1]!.threadEvents(threadId, { signal: stop.signal })) {
      seen.push(item);
      if (item.event.type === 'done' || item.event.type === 'error') ended.add(item.event.trace_id);
      if (runs.every((run) => ended.has(run))) break;
    }
  } finally {
    stop.abort();
  }
  return seen;
}

/** Fails when two runs of the thread overlap in its event stream. */
function expectOneRunAtATime(events: readonly ThreadEvent[]): string[] {
  const order: string[] = [];
  for (const { event } of events) if (order.at(-1) !== event.trace_id) order.push(event.trace_id);
  // Each run's events form one block: a run that came back after another had started overlapped it.
  expect(new Set(order).size, `runs interleaved: ${order.join(' ')}`).toBe(order.length);
  for (let i = 1; i < events.length; i++) expect(events[i]!.id).toBeGreaterThan(events[i - 1]!.id);
  return order;
}

const turnTraces = (thread: ThreadReply): string[] =>
  thread.entries.flatMap(({ entry }) => (entry.type === 'turn' ? [entry.trace_id] : []));

describe('double texting, two gateways, concurrent submissions', () => {
  it('reject: of four messages sent at once while none runs, one runs and three are refused 409 naming it', async () => {
    const thread = await clients[0]!.createThread({ strategy: 'reject' });
    const replies = await Promise.all(
      [0, 1, 2, 3].map((i) =>
        say(i % 2, thread.thread_id, i === 0 ? 'reject-all:first' : `reject-all:first`),
      ),
    );
    const accepted = replies.filter((reply) => reply.status === 202);
    expect(accepted, JSON.stringify(replies)).toHaveLength(1);
    const active = accepted[0]!.body.trace_id as string;
    for (const refused of replies.filter((reply) => reply.status !== 202)) {
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'CONFLICT', detail: { active_trace_id: active } });
    }
    await waitFor(() => holding.has('reject-all:first'), { timeoutMs: 60_000 });
    gate('reject-all:first').open();
    expect(await finalStatus(active)).toBe('done');
    const stored = await clients[1]!.thread(thread.thread_id);
    expect(turnTraces(stored)).toEqual([active]);
    expect(stored.status).toBe('idle');
  }, 120_000);

  it('enqueue: four messages sent at once through two gateways all run, one after another, in the order admitted', async () => {
    const thread = await clients[0]!.createThread({ strategy: 'enqueue' });
    const first = await say(0, thread.thread_id, 'enqueue:first');
    expect(first.status).toBe(202);
    await waitFor(() => holding.has('enqueue:first'), { timeoutMs: 60_000 });
    const more = await Promise.all([1, 2, 3].map((i) => say(i % 2, thread.thread_id, `enqueue:${i}`)));
    expect(more.map((reply) => reply.status)).toEqual([202, 202, 202]);
    const waiting = await clients[1]!.thread(thread.thread_id);
    expect(waiting.active_trace_id).toBe(first.body.trace_id);
    expect(waiting.queued_trace_ids).toHaveLength(3);
    gate('enqueue:first').open();
    const traces = [first, ...more].map((reply) => reply.body.trace_id as string);
    for (const trace of traces) expect(await finalStatus(trace)).toBe('done');
    const order = expectOneRunAtATime(await threadEvents(thread.thread_id, traces));
    const stored = await clients[0]!.thread(thread.thread_id);
    expect(order).toEqual(stored.runs);
    expect(turnTraces(stored)).toEqual(stored.runs);
    expect(stored.messages.filter((m) => m.role === 'user')).toHaveLength(4);
  }, 180_000);

  it('a run the assembler fails frees its thread by itself (no read or submission needed), so the next message runs', async () => {
    const thread = await clients[0]!.createThread({ strategy: 'reject' });
    const failed = await say(0, thread.thread_id, 'broken:1', { workflow_id: 'broken_chat' });
    expect(failed.status).toBe(202);
    expect(await finalStatus(failed.body.trace_id as string)).toBe('error');
    // Read the record itself: a GET of the thread would release a stale claim on its own.
    const nc = await connect({ servers: mesh.nats.url });
    try {
      const kv = await new Kvm(nc).open('mesh_threads');
      await waitFor(
        async () => {
          const entry = await kv.get(`acme.${thread.thread_id}`);
          return entry?.json<{ active?: unknown }>().active === undefined || undefined;
        },
        { timeoutMs: 30_000, description: 'the thread freed' },
      );
    } finally {
      await nc.close();
    }
    const next = await say(1, thread.thread_id, 'broken:2');
    expect(next.status).toBe(202);
    expect(await finalStatus(next.body.trace_id as string)).toBe('done');
  }, 120_000);

  for (const strategy of ['interrupt', 'rollback'] as const) {
    it(`${strategy}: two messages sent at once through two gateways cancel the active run; ${strategy === 'interrupt' ? 'its finished tool round stays, without its partial answer' : 'its turn is dropped'}; both run after it`, async () => {
      const thread = await clients[0]!.createThread({ strategy });
      const first = await say(0, thread.thread_id, `${strategy}:first`);
      const firstTrace = first.body.trace_id as string;
      await waitFor(() => holding.has(`${strategy}:first`), { timeoutMs: 60_000 });
      const more = await Promise.all([1, 2].map((i) => say(i % 2, thread.thread_id, `${strategy}:${i}`)));
      expect(more.map((reply) => reply.status)).toEqual([202, 202]);
      expect(await finalStatus(firstTrace)).toBe('cancelled');
      const traces = more.map((reply) => reply.body.trace_id as string);
      for (const trace of traces) expect(await finalStatus(trace)).toBe('done');
      expectOneRunAtATime(await threadEvents(thread.thread_id, [firstTrace, ...traces]));
      const stored = await clients[1]!.thread(thread.thread_id);
      const turns = stored.entries.flatMap(({ entry }) => (entry.type === 'turn' ? [entry] : []));
      if (strategy === 'interrupt') {
        expect(turns.map((turn) => turn.trace_id)).toEqual([firstTrace, ...stored.runs.slice(1)]);
        expect(turns[0]!.interrupted).toBe(true);
        expect(turns[0]!.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
        expect(JSON.stringify(turns[0]!.messages)).not.toContain('answer to');
      } else {
        expect(turns.map((turn) => turn.trace_id)).toEqual(stored.runs.slice(1));
      }
      expect(turns.slice(-2).map((turn) => turn.messages.at(-1)?.content)).toEqual(
        stored.runs.slice(1).map((run) => `answer to ${strategy}:${traces.indexOf(run) + 1}`),
      );
    }, 180_000);
  }
});

describe('compaction', () => {
  const LIMIT = 60;
  /** Drives `turns` turns through the thread, alternating gateways; every one must end done. */
  async function drive(threadId: string, tag: string, turns: number): Promise<void> {
    for (let i = 1; i <= turns; i++) {
      const reply = await say(i % 2, threadId, `${tag}:${i}`);
      expect(reply.status, JSON.stringify(reply.body)).toBe(202);
      expect(await finalStatus(reply.body.trace_id as string)).toBe('done');
    }
  }
  /** The history each model call of the thread carried (between the system prompt and the new message). */
  const histories = (tag: string): Body['messages'][] =>
    model.requests
      .map((r) => r.body as Body)
      .filter((b) => lastUser(b).startsWith(`${tag}:`) && b.messages?.[0]?.role === 'system')
      .map((b) => b.messages!.slice(1, -1));

  it('cut: a thread driven far past a small window keeps answering, and no model call carries more history than the window', async () => {
    const thread = await clients[0]!.createThread({
      compaction: { max_history_tokens: LIMIT, policy: 'cut', keep_turns: 2 },
    });
    await drive(thread.thread_id, 'cut', 8);
    const stored = await clients[1]!.thread(thread.thread_id);
    expect(stored.entries.filter(({ entry }) => entry.type === 'turn')).toHaveLength(8);
    const compactions = stored.entries.flatMap(({ entry }) => (entry.type === 'compaction' ? [entry] : []));
    expect(compactions.length).toBeGreaterThan(0);
    expect(compactions.every((c) => c.method === 'cut')).toBe(true);
    const seen = histories('cut');
    expect(seen).toHaveLength(8);
    for (const history of seen) expect(estimateTokens(history as ChatMessage[])).toBeLessThanOrEqual(LIMIT);
    // Whole turns only: every kept history starts with a user message and ends with an answer.
    for (const history of seen.filter((h) => h!.length > 0)) {
      expect(history![0]!.role).toBe('user');
      expect(history!.at(-1)!.role).toBe('assistant');
    }
  }, 180_000);

  it('summarise with a failing summariser: each compaction falls back to a cut (saying why) and the thread keeps answering', async () => {
    const thread = await clients[0]!.createThread({
      compaction: { max_history_tokens: LIMIT, policy: 'summarise', keep_turns: 1 },
    });
    await drive(thread.thread_id, 'sumfail', 6);
    const stored = await clients[1]!.thread(thread.thread_id);
    const compactions = stored.entries.flatMap(({ entry }) => (entry.type === 'compaction' ? [entry] : []));
    expect(compactions.length).toBeGreaterThan(0);
    for (const compaction of compactions) {
      expect(compaction.method).toBe('cut');
      expect(compaction.fallback_reason).toContain('500');
    }
    for (const history of histories('sumfail')) {
      expect(estimateTokens(history as ChatMessage[])).toBeLessThanOrEqual(LIMIT);
    }
  }, 180_000);

  it('summarise: older turns are replaced by the summary, recorded once, and the next run sees it', async () => {
    const thread = await clients[0]!.createThread({
      compaction: { max_history_tokens: LIMIT, policy: 'summarise', keep_turns: 1 },
    });
    await drive(thread.thread_id, 'sumok', 4);
    const stored = await clients[1]!.thread(thread.thread_id);
    const compactions = stored.entries.flatMap(({ entry }) => (entry.type === 'compaction' ? [entry] : []));
    expect(compactions.some((c) => c.method === 'summary' && c.summary === 'SUMMARY-OF-EARLIER')).toBe(true);
    // One compaction per run at most: a task compacts the thread once, however often it is assembled.
    const byTask = compactions.map((c) => c.trace_id);
    expect(new Set(byTask).size).toBe(byTask.length);
    const last = histories('sumok').at(-1)!;
    expect(JSON.stringify(last)).toContain('SUMMARY-OF-EARLIER');
  }, 180_000);
});

/** The model calls made for messages tagged `tag:` (the first of each turn and those after a tool). */
const callsFor = (tag: string): Body[] =>
  model.requests.map((r) => r.body as Body).filter((b) => lastUser(b).startsWith(`${tag}:`));

/** The user messages a model call carried before its last one (the thread's history it was given). */
const historyUsers = (body: Body): string[] =>
  (body.messages ?? [])
    .filter((m) => m.role === 'user')
    .slice(0, -1)
    .map((m) => String(m.content));

describe('retention', () => {
  async function turn(threadId: string, text: string): Promise<void> {
    const reply = await say(0, threadId, text);
    expect(reply.status, JSON.stringify(reply.body)).toBe(202);
    expect(await finalStatus(reply.body.trace_id as string)).toBe('done');
  }

  it('max_turns 1: the next run is given only the last turn, the thread lists only it, and a thread without retention keeps all', async () => {
    const short = await clients[0]!.createThread({ retention: { max_turns: 1 } });
    expect(short.retention).toEqual({ max_turns: 1 });
    const long = await clients[0]!.createThread({});
    for (const i of [1, 2, 3]) {
      await turn(short.thread_id, `ret:${i}`);
      await turn(long.thread_id, `keep:${i}`);
    }
    expect(historyUsers(callsFor('ret').at(-1)!)).toEqual(['ret:2']);
    expect(historyUsers(callsFor('keep').at(-1)!)).toEqual(['keep:1', 'keep:2']);
    const stored = await clients[1]!.thread(short.thread_id);
    expect(
      stored.entries.map(({ entry }) => (entry.type === 'turn' ? entry.messages[0]?.content : entry.type)),
    ).toEqual(['ret:3']);
    expect(stored.messages.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['ret:3']);
    // The read purged the older turns from the stream (a second read finds the same, nothing older).
    const stream = await streamEntries(short.thread_id);
    expect(stream).toBe(1);
    expect((await clients[1]!.thread(long.thread_id)).entries).toHaveLength(3);
  }, 180_000);

  it('max_age_seconds 1: once its turn is older than a second, the next run is given no history', async () => {
    const thread = await clients[0]!.createThread({ retention: { max_age_seconds: 1 } });
    await turn(thread.thread_id, 'age:1');
    // The thread's turn leaves the listing once it is a second old (polled, not slept on).
    await waitFor(
      async () => ((await clients[1]!.thread(thread.thread_id)).entries.length === 0 ? true : undefined),
      { timeoutMs: 20_000, intervalMs: 200, description: 'the turn to age out' },
    );
    await turn(thread.thread_id, 'age:2');
    expect(historyUsers(callsFor('age').at(-1)!)).toEqual([]);
    expect(await streamEntries(thread.thread_id)).toBeLessThanOrEqual(1);
  }, 120_000);

  it('a bad retention is refused 400 naming the field', async () => {
    for (const retention of [
      {},
      { max_turns: 0 },
      { max_age_seconds: 31 * 86_400 },
      { max_turns: 'x' },
      { days: 1 },
    ]) {
      const response = await fetch(`${mesh.gatewayUrls[0]}/v1/threads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${mesh.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ retention }),
      });
      const body = (await response.json()) as { code?: string; message?: string; detail?: unknown };
      expect(response.status, JSON.stringify(retention)).toBe(400);
      expect(body.code).toBe('INVALID_REQUEST');
      expect(JSON.stringify(body)).toContain('retention');
    }
  });
});

/** How many messages MESH_THREADS holds for the thread (what purges left). */
async function streamEntries(threadId: string): Promise<number> {
  const nc = await connect({ servers: mesh.nats.url });
  const subject = threadEntriesSubject(MESH_ACCOUNT, threadId);
  try {
    const jsm = await jetstreamManager(nc);
    const info = await jsm.streams.info(Streams.THREADS.name, { subjects_filter: subject });
    return info.state.subjects?.[subject] ?? 0;
  } finally {
    await nc.close();
  }
}

describe('compaction of turns with tool calls', () => {
  it('cut past a small window: no model call carries a tool result without its call, or a call without its result', async () => {
    const thread = await clients[0]!.createThread({
      compaction: { max_history_tokens: 260, policy: 'cut', keep_turns: 3 },
    });
    for (let i = 1; i <= 6; i++) {
      const reply = await say(i % 2, thread.thread_id, `tc:${i}`);
      expect(reply.status, JSON.stringify(reply.body)).toBe(202);
      expect(await finalStatus(reply.body.trace_id as string)).toBe('done');
    }
    const stored = await clients[1]!.thread(thread.thread_id);
    expect(stored.entries.some(({ entry }) => entry.type === 'compaction')).toBe(true);
    const calls = callsFor('tc');
    // Each turn: one call for the tool, one after its result.
    expect(calls).toHaveLength(12);
    let historiesWithTools = 0;
    for (const body of calls) {
      const messages = (body.messages ?? []) as ChatMessage[];
      const called = new Set<string>();
      const answered = new Set<string>();
      for (const message of messages) {
        if (message.role === 'assistant') for (const call of message.tool_calls ?? []) called.add(call.id);
        if (message.role === 'tool') {
          expect(called.has(message.tool_call_id), `result ${message.tool_call_id} without its call`).toBe(
            true,
          );
          answered.add(message.tool_call_id);
        }
      }
      for (const id of called) expect(answered.has(id), `call ${id} without its result`).toBe(true);
      const ownCall = `call_tc_${lastUser(body).slice(3)}`;
      const history = messages.filter((m) => m.role === 'tool' && m.tool_call_id !== ownCall);
      if (history.length > 0) historiesWithTools += 1;
    }
    // The check means something: compacted histories did carry earlier turns' tool calls and results.
    expect(historiesWithTools).toBeGreaterThan(0);
  }, 180_000);
});

describe('following a thread over SSE, resumed', () => {
  it('broken off during run 1 and resumed with Last-Event-ID after run 2: exactly the events after that id, across both runs', async () => {
    const thread = await clients[0]!.createThread({});
    const first: ThreadEvent[] = [];
    const stop = new AbortController();
    const reply1 = await say(0, thread.thread_id, 'follow:1');
    expect(reply1.status).toBe(202);
    const run1 = reply1.body.trace_id as string;
    try {
      for await (const item of clients[1]!.threadEvents(thread.thread_id, { signal: stop.signal })) {
        first.push(item);
        if (first.length === 2) break;
      }
    } finally {
      stop.abort();
    }
    expect(first.every((item) => item.event.trace_id === run1)).toBe(true);
    expect(await finalStatus(run1)).toBe('done');
    const reply2 = await say(1, thread.thread_id, 'follow:2');
    expect(reply2.status).toBe(202);
    const run2 = reply2.body.trace_id as string;
    expect(await finalStatus(run2)).toBe('done');

    const resumed = await followUntil(thread.thread_id, [run1, run2], first.at(-1)!.id);
    const whole = await followUntil(thread.thread_id, [run1, run2]);
    expect([...first, ...resumed].map((item) => item.id)).toEqual(whole.map((item) => item.id));
    expect(resumed.every((item) => item.id > first.at(-1)!.id)).toBe(true);
    expect(new Set(resumed.map((item) => item.event.trace_id))).toEqual(new Set([run1, run2]));
    expect(whole.filter((item) => item.event.type === 'done')).toHaveLength(2);
  }, 120_000);
});

/** The thread's SSE events (after `afterId`, from gateway 0) until every run named has ended. */
async function followUntil(
  threadId: string,
  runs: readonly string[],
  afterId?: number,
): Promise<ThreadEvent[]> {
  const seen: ThreadEvent[] = [];
  const ended = new Set<string>();
  const stop = new AbortController();
  try {
    for await (const item of clients[0]!.threadEvents(threadId, {
      signal: stop.signal,
      ...(afterId === undefined ? {} : { afterId }),
    })) {
      seen.push(item);
      if (item.event.type === 'done' || item.event.type === 'error') ended.add(item.event.trace_id);
      if (runs.every((run) => ended.has(run))) break;
    }
  } finally {
    stop.abort();
  }
  return seen;
}

describe('a conversation through kills and restarts', () => {
  it('three turns through two gateways, NATS restarted between turns and the executor of turn 2 SIGKILLed mid-answer: the thread holds the three turns once each', async () => {
    const thread = await clients[0]!.createThread({ metadata: { title: 'kills' } });
    const send = async (index: number, text: string): Promise<string> => {
      // A fixed trace id: a submission retried while the services reconnect is a repeat, never a second task.
      const traceId = crypto.randomUUID().replaceAll('-', '');
      await waitFor(
        async () => {
          const reply = await say(index, thread.thread_id, text, { trace_id: traceId }).catch(
            () => undefined,
          );
          if (reply?.status === 202) return true;
          if (reply !== undefined && reply.status !== 503 && reply.status !== 502) {
            throw new Error(`submit → ${reply.status} ${JSON.stringify(reply.body)}`);
          }
          return undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250, description: `${text} accepted` },
      );
      return traceId;
    };
    const restartNats = async (): Promise<void> => {
      await mesh.nats.kill();
      await mesh.nats.restart();
    };

    const t1 = await send(0, 'conv:1');
    expect(await finalStatus(t1)).toBe('done');
    await restartNats();

    const t2 = await send(1, 'conv:2');
    await waitFor(() => holding.has('conv:2'), { timeoutMs: 60_000 });
    const victim = await waitFor(
      () =>
        mesh.executors.find((executor) =>
          executor.logs.some((line) => line.trace_id === t2 && line.msg === 'task attempt started'),
        ),
      { timeoutMs: 10_000 },
    );
    await victim.stop('SIGKILL');
    gate('conv:2').open();
    expect(await finalStatus(t2)).toBe('done');
    const t2Events = await sseEvents(mesh, t2);
    expect(t2Events.some((event) => event.type === 'attempt_started')).toBe(true);
    await restartNats();

    const t3 = await send(0, 'conv:3');
    expect(await finalStatus(t3)).toBe('done');

    const stored = await waitFor(() => clients[1]!.thread(thread.thread_id).catch(() => undefined), {
      timeoutMs: 30_000,
    });
    expect(turnTraces(stored)).toEqual([t1, t2, t3]);
    expect(stored.messages.map((m) => [m.role, typeof m.content === 'string' ? m.content : null])).toEqual([
      ['user', 'conv:1'],
      ['assistant', 'A1'],
      ['user', 'conv:2'],
      ['assistant', null],
      ['tool', expect.stringContaining('paid')],
      ['assistant', 'A2 paid.'],
      ['user', 'conv:3'],
      ['assistant', 'A3'],
    ]);
    // The tool ran once: the killed attempt's result was stored, the survivor resumed from it.
    expect(api.requests.filter((r) => r.query.amount === '2')).toHaveLength(1);
    // Turn 3's model call had the history after the system prompt, then the new message.
    const third = model.requests.find((r) => lastUser(r.body as Body) === 'conv:3')!;
    expect(((third.body as Body).messages ?? []).map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
    ]);
    expect(stored.metadata).toEqual({ title: 'kills' });
  }, 300_000);
});
