// The sub-agent runner on a real NATS server, with a stand-in for the gateway's trusted submit subject
// that does what the gateway does with a sub-task (a status record created once per trace id, a repeat
// answered as such) and a test that plays the sub-task's executor (its events and final status written
// with the bus's own writer and store). What is checked: what the runner submits, how it follows the
// sub-task to its end, the cancel cascade, re-attaching after a hand-back, and the limits.
import {
  ensureMeshStreams,
  openMeshBuckets,
  ParkedTaskStore,
  TaskEventWriter,
  TaskStatusStore,
} from '@agentmesh/bus';
import {
  cancelSubject,
  newTraceId,
  Subjects,
  TASK_PARENT_HEADER,
  taskEventsSubject,
  type AgentTool,
  type TaskMeta,
  type TaskStatusRecord,
} from '@agentmesh/protocol';
import { parkedTaskFixture, startNats, waitFor, type NatsServer } from '@agentmesh/testkit';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TaskAbort } from '../../task-abort.js';
import {
  SubAgentToolRunner,
  SubtaskFanOut,
  subtaskTraceId,
  type SubtaskCallerContext,
  type SubtaskEvent,
} from './index.js';

const ACCOUNT = 'acme';

interface Submission {
  headers: Record<string, string>;
  body: { trace_id: string; workflow_id: string; user_id: string; deadline?: string; messages: unknown[] };
  created: boolean;
}

let nats: NatsServer;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let statuses: TaskStatusStore;
const submissions: Submission[] = [];

beforeAll(async () => {
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  await ensureMeshStreams(jsm);
  statuses = new TaskStatusStore((await openMeshBuckets(js, { only: ['tasks'] })).tasks);
  // The gateway's part: one status record per trace id; a repeat creates nothing and is answered the same.
  nc.subscribe(Subjects.GATEWAY_SUBMIT, {
    callback: (_error, msg) => {
      void (async () => {
        const body = msg.json<Submission['body']>();
        const headers = Object.fromEntries(
          [...(msg.headers?.keys() ?? [])].map((key) => [key, msg.headers!.get(key)]),
        );
        const parent = JSON.parse(headers[TASK_PARENT_HEADER]!) as { trace_id: string };
        const now = new Date().toISOString();
        const created = await statuses.create({
          trace_id: body.trace_id,
          account_id: ACCOUNT,
          workflow_id: body.workflow_id,
          status: 'queued',
          attempt: 0,
          submitted_at: now,
          updated_at: now,
          parent_trace_id: parent.trace_id,
        });
        submissions.push({ headers, body, created });
        msg.respond(
          JSON.stringify({
            trace_id: body.trace_id,
            events_subject: taskEventsSubject(ACCOUNT, body.trace_id),
            events_url: `/v1/tasks/${body.trace_id}/events`,
          }),
        );
      })();
    },
  });
  await nc.flush();
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

const researcher: AgentTool = {
  type: 'AGENT',
  name: 'agent_researcher',
  description: 'Researches',
  parameters: { type: 'object', properties: { input: { type: 'string' } }, required: ['input'] },
  workflow_id: 'researcher',
};

function parentMeta(overrides: Partial<TaskMeta> = {}): TaskMeta {
  return {
    workflow_id: 'parent',
    trace_id: newTraceId(),
    user_id: 'u1',
    account_id: ACCOUNT,
    submitted_at: new Date().toISOString(),
    ...overrides,
  };
}

function caller(
  meta: TaskMeta,
  fanOut = new SubtaskFanOut(8),
  deadline?: number,
): SubtaskCallerContext & { events: SubtaskEvent[] } {
  const events: SubtaskEvent[] = [];
  return {
    meta,
    fanOut,
    ...(deadline === undefined ? {} : { deadline }),
    emit: (event) => events.push(event),
    events,
  };
}

function runner(maxDepth = 3): SubAgentToolRunner {
  return new SubAgentToolRunner({ nc, jsm, statuses, maxDepth });
}

/** Plays the sub-task's executor: its events, then its final status. */
async function finishSubtask(
  traceId: string,
  outcome: { done: string } | { error: { code: 'CANCELLED' | 'INTERNAL'; message: string } },
): Promise<void> {
  const writer = TaskEventWriter.first(js, { accountId: ACCOUNT, traceId, attempt: 1 });
  await writer.emit('message_chunk', { delta: 'working' });
  const terminal =
    'done' in outcome
      ? await writer.emit('done', {
          message: outcome.done,
          steps: 1,
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
          duration_ms: 5,
        })
      : await writer.emit('error', { ...outcome.error, retryable: false });
  const status: TaskStatusRecord['status'] =
    'done' in outcome ? 'done' : outcome.error.code === 'CANCELLED' ? 'cancelled' : 'error';
  await statuses.update(ACCOUNT, traceId, (current) =>
    current === undefined
      ? undefined
      : {
          ...current,
          status,
          attempt: 1,
          last_seq: terminal.seq,
          updated_at: new Date().toISOString(),
          ...('error' in outcome ? { error: outcome.error } : {}),
        },
  );
}

function submissionsOf(traceId: string): Submission[] {
  return submissions.filter((submission) => submission.body.trace_id === traceId);
}

describe('SubAgentToolRunner', () => {
  it("when an agent tool is called, the sub-task is submitted for the same account and user with its parent link and the parent's deadline, and its answer is the call's result", async () => {
    const root = newTraceId();
    const meta = parentMeta({
      account_type: 'pro',
      parent: { trace_id: root, call_id: 'c0', root_trace_id: root, depth: 1 },
    });
    const deadline = Date.now() + 60_000;
    const task = caller(meta, new SubtaskFanOut(8), deadline);
    const subId = subtaskTraceId(meta.trace_id, 'call-1');
    const abort = new TaskAbort();

    const running = runner().run(
      researcher,
      { input: 'what is 6 x 7?' },
      { callId: 'call-1', signal: abort.signal, task },
    );
    await waitFor(() => submissionsOf(subId).length === 1, { description: 'the submission' });
    await finishSubtask(subId, { done: 'it is 42' });
    const outcome = await running;

    expect(outcome).toEqual({ ok: true, result: 'it is 42' });
    const [submission] = submissionsOf(subId);
    expect(submission!.body).toMatchObject({
      workflow_id: 'researcher',
      user_id: 'u1',
      messages: [{ role: 'user', content: 'what is 6 x 7?' }],
      deadline: new Date(deadline).toISOString(),
    });
    expect(submission!.headers).toMatchObject({ 'x-account-id': ACCOUNT, 'x-account-type': 'pro' });
    expect(JSON.parse(submission!.headers[TASK_PARENT_HEADER]!)).toEqual({
      trace_id: meta.trace_id,
      call_id: 'call-1',
      root_trace_id: root,
      depth: 2,
    });
    expect(task.events).toEqual([
      {
        type: 'subtask_started',
        data: {
          call_id: 'call-1',
          tool: 'agent_researcher',
          subtask_trace_id: subId,
          workflow_id: 'researcher',
        },
      },
      {
        type: 'subtask_finished',
        data: {
          call_id: 'call-1',
          tool: 'agent_researcher',
          subtask_trace_id: subId,
          status: 'done',
          usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
        },
      },
    ]);
  });

  it("when the sub-task ends with an error, the call fails with the sub-task's code and subtask_finished says so", async () => {
    const task = caller(parentMeta());
    const subId = subtaskTraceId(task.meta.trace_id, 'call-1');
    const running = runner().run(
      researcher,
      { input: 'fail' },
      { callId: 'call-1', signal: new TaskAbort().signal, task },
    );
    await waitFor(() => submissionsOf(subId).length === 1, { description: 'the submission' });
    await finishSubtask(subId, { error: { code: 'INTERNAL', message: 'the sub-agent broke' } });

    const outcome = await running;

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'INTERNAL', detail: { subtask_trace_id: subId } },
    });
    expect(task.events.at(-1)).toMatchObject({
      type: 'subtask_finished',
      data: { status: 'error', error: { code: 'INTERNAL', message: 'the sub-agent broke' } },
    });
  });

  it('when the calling task is cancelled while its sub-task runs, the sub-task is asked to cancel (status and broadcast)', async () => {
    const task = caller(parentMeta());
    const subId = subtaskTraceId(task.meta.trace_id, 'call-1');
    const broadcasts = nc.subscribe(cancelSubject(ACCOUNT, subId), { max: 1 });
    const heard = (async () => {
      for await (const msg of broadcasts) return msg.json<{ trace_id: string; reason?: string }>();
      return undefined;
    })();
    await nc.flush();
    const abort = new TaskAbort();
    const running = runner().run(
      researcher,
      { input: 'slow' },
      { callId: 'call-1', signal: abort.signal, task },
    );
    await waitFor(() => task.events.length === 1, { description: 'subtask_started' });

    abort.cancel('by its user');
    const outcome = await running;

    expect(outcome).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect((await statuses.get(ACCOUNT, subId))?.cancel_requested_at).toBeDefined();
    expect(await heard).toMatchObject({ trace_id: subId, reason: 'its parent task ended' });
  });

  it("when the calling task is cancelled while its sub-task waits for approval (held by no executor), the sub-task's approvals are cancelled and it is queued again to end", async () => {
    const parked = new ParkedTaskStore((await openMeshBuckets(js, { only: ['parkedTasks'] })).parkedTasks);
    const task = caller(parentMeta());
    const subId = subtaskTraceId(task.meta.trace_id, 'call-parked');
    const abort = new TaskAbort();
    const running = new SubAgentToolRunner({
      nc,
      jsm,
      statuses,
      maxDepth: 3,
      parked: { store: parked, js },
    }).run(researcher, { input: 'needs approval' }, { callId: 'call-parked', signal: abort.signal, task });
    await waitFor(() => task.events.length === 1, { description: 'subtask_started' });
    // The sub-task's executor parked it: its tool call waits for a person.
    await parked.park(
      parkedTaskFixture({
        traceId: subId,
        accountId: ACCOUNT,
        callIds: ['c1'],
        subject: 'mesh.tasks.assembled.acme.parked-test',
      }),
    );
    await statuses.update(ACCOUNT, subId, (current) =>
      current === undefined
        ? undefined
        : { ...current, status: 'waiting_approval', updated_at: new Date().toISOString() },
    );

    abort.cancel('by its user');
    expect(await running).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });

    const after = (await parked.get(ACCOUNT, subId))?.parked;
    expect(after?.approvals.map((approval) => approval.state)).toEqual(['cancelled']);
    expect(after?.resumed_at).toBeDefined();
    expect((await statuses.get(ACCOUNT, subId))?.cancel_requested_at).toBeDefined();
  });

  it('when the attempt is handed back while its sub-task runs, the sub-task goes on, and the call run again with its call_id re-attaches to it: one sub-task', async () => {
    const meta = parentMeta();
    const subId = subtaskTraceId(meta.trace_id, 'call-1');
    const first = caller(meta, new SubtaskFanOut(1));
    const abort = new TaskAbort();
    const running = runner().run(
      researcher,
      { input: 'long' },
      { callId: 'call-1', signal: abort.signal, task: first },
    );
    await waitFor(() => first.events.length === 1, { description: 'subtask_started' });

    abort.handBack();
    expect(await running).toMatchObject({ ok: false, error: { code: 'CANCELLED' } });
    expect((await statuses.get(ACCOUNT, subId))?.cancel_requested_at).toBeUndefined();

    // The next attempt: the log says call-1 started a sub-task (it fills the fan-out of 1), and the call runs again.
    const resumed = caller(meta, new SubtaskFanOut(1, ['call-1']));
    const again = runner().run(
      researcher,
      { input: 'long' },
      { callId: 'call-1', signal: new TaskAbort().signal, task: resumed },
    );
    await waitFor(() => submissionsOf(subId).length === 2, { description: 'the repeated submission' });
    await finishSubtask(subId, { done: 'finally' });

    expect(await again).toEqual({ ok: true, result: 'finally' });
    expect(submissionsOf(subId).map((submission) => submission.created)).toEqual([true, false]);
    const another = await runner().run(
      researcher,
      { input: 'more' },
      { callId: 'call-2', signal: new TaskAbort().signal, task: resumed },
    );
    expect(another).toMatchObject({ ok: false, error: { code: 'SUBTASK_LIMIT_EXCEEDED' } });
  });

  it("when another task of the account already has the sub-task's id, the call fails CONFLICT, takes nothing of that task and leaves it alone", async () => {
    const task = caller(parentMeta());
    const subId = subtaskTraceId(task.meta.trace_id, 'call-1');
    const now = new Date().toISOString();
    // Submitted beforehand by somebody else over HTTP: no parent link.
    await statuses.create({
      trace_id: subId,
      account_id: ACCOUNT,
      workflow_id: 'researcher',
      status: 'running',
      attempt: 1,
      submitted_at: now,
      updated_at: now,
    });
    const abort = new TaskAbort();
    const running = runner().run(
      researcher,
      { input: 'x' },
      { callId: 'call-1', signal: abort.signal, task },
    );

    const outcome = await running;
    abort.cancel();

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'CONFLICT', detail: { subtask_trace_id: subId } },
    });
    expect(task.events).toEqual([]);
    expect((await statuses.get(ACCOUNT, subId))?.cancel_requested_at).toBeUndefined();
  });

  it('when a sub-task would nest deeper than MAX_SUBTASK_DEPTH, the call is a SUBTASK_LIMIT_EXCEEDED tool error and nothing is submitted', async () => {
    const root = newTraceId();
    const task = caller(
      parentMeta({ parent: { trace_id: root, call_id: 'c', root_trace_id: root, depth: 2 } }),
    );
    const before = submissions.length;

    const outcome = await runner(2).run(
      researcher,
      { input: 'deeper' },
      { callId: 'call-1', signal: new TaskAbort().signal, task },
    );

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'SUBTASK_LIMIT_EXCEEDED', detail: { max_depth: 2 } },
    });
    expect(submissions.length).toBe(before);
    expect(task.events).toEqual([]);
    expect(task.fanOut.started).toBe(0);
  });

  it('when a task has started MAX_SUBTASKS_PER_TASK sub-tasks in earlier attempts, a new call is refused with SUBTASK_LIMIT_EXCEEDED and nothing is submitted', async () => {
    const task = caller(parentMeta(), new SubtaskFanOut(2, ['a', 'b']));
    const before = submissions.length;

    const outcome = await runner().run(
      researcher,
      { input: 'one more' },
      { callId: 'c', signal: new TaskAbort().signal, task },
    );

    expect(outcome).toMatchObject({
      ok: false,
      error: { code: 'SUBTASK_LIMIT_EXCEEDED', detail: { max_subtasks: 2 } },
    });
    expect(submissions.length).toBe(before);
  });
});
