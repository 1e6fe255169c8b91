// Human approval of tool calls on real NATS with in-process executors, a scripted model and a loopback
// tool API: a call that needs approval parks the task (no executor holds it), the decision is taken the
// way the gateway takes it (ParkedTaskStore: decideApproval, then resumeIfReady), and any executor resumes it.
import {
  cancelApprovals,
  decideApproval,
  AccountUsageStore,
  openMeshBuckets,
  ParkedTaskStore,
  readTaskEventLog,
  TaskEventWriter,
  TaskStatusStore,
  type MeshBuckets,
} from '@agentmesh/bus';
import {
  Consumers,
  MODEL_API_KEY_VAULT_ENTRY,
  newTraceId,
  taskAssembledSubject,
  utcDay,
  type ApprovalPolicy,
  type AssembledTask,
  type HttpTool,
  type TaskEvent,
} from '@agentmesh/protocol';
import {
  startNats,
  startRecordingApi,
  startScriptedModel,
  waitFor,
  type ChatCompletionRequest,
  type NatsServer,
  type RecordingApi,
  type ScriptedModel,
} from '@agentmesh/testkit';
import { generateVaultKeyPair } from '@agentmesh/vault';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessExecutor } from './__fixtures__/in-process-executor.js';
import { assembledTask } from './__fixtures__/tasks.js';

const ACCOUNT = 'acme';
const MODEL_KEY = 'canary-model-key-aa0c11';
const PAY_KEY = 'canary-pay-key-aa0c22';
const vaultKeys = generateVaultKeyPair('exec-approvals-1');

let nats: NatsServer;
let client: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let buckets: Pick<MeshBuckets, 'tasks' | 'parkedTasks'>;
let parkedTasks: ParkedTaskStore;
let statuses: TaskStatusStore;
let model: ScriptedModel;
let api: RecordingApi;
const instances: { stop(): Promise<void> }[] = [];

const userText = (request: { body: unknown }): string =>
  String(
    (request.body as ChatCompletionRequest['body']).messages.find((m) => m.role === 'user')?.content ?? '',
  );

beforeAll(async () => {
  nats = await startNats();
  client = await connect({ servers: nats.url });
  js = jetstream(client);
  jsm = await jetstreamManager(client);
  buckets = await openMeshBuckets(js, { only: ['tasks', 'parkedTasks'] });
  parkedTasks = new ParkedTaskStore(buckets.parkedTasks);
  statuses = new TaskStatusStore(buckets.tasks);
  model = await startScriptedModel({
    apiKey: MODEL_KEY,
    // "<tool> <amount> ...": calls the tool with the amount, then answers with what the tool said.
    respond: (request) => {
      const messages = request.body.messages;
      const answer = messages.findLast((m) => m.role === 'tool');
      const [tool = 'pay', amount = '0'] = userText(request).split(' ');
      if (tool === 'pay_often') {
        // Five payments, one per step, each approved on its own.
        const paid = messages.filter((m) => m.role === 'tool').length;
        if (paid < 5) {
          const call = { id: `call_often_${paid + 1}`, name: tool, arguments: { amount: 6000 + paid } };
          return { toolCalls: [call] };
        }
      }
      if (answer !== undefined) return { content: `finished: ${String(answer.content)}` };
      return { toolCalls: [{ id: 'call_pay', name: tool, arguments: { amount: Number(amount) } }] };
    },
  });
  api = await startRecordingApi({
    routes: [
      {
        method: 'POST',
        path: '/pay',
        reply: (request) => ({ body: { paid: (request.body as { amount: number }).amount } }),
      },
    ],
  });
});

afterEach(async () => {
  await Promise.all(instances.splice(0).map((instance) => instance.stop()));
});

afterAll(async () => {
  await client?.drain();
  await Promise.all([model?.stop(), api?.stop()]);
  await nats?.stop();
});

interface Instance {
  stop(): Promise<void>;
  logs: string[];
}

async function startInstance(env: Record<string, string> = {}): Promise<Instance> {
  const logs: string[] = [];
  const running = await startInProcessExecutor({
    natsUrl: nats.url,
    vaultKeys,
    logLines: logs,
    env: { ACK_WAIT_MS: '3000', ACK_PROGRESS_MS: '300', PULL_EXPIRES_MS: '1000', ...env },
  });
  let stopped = false;
  const instance = {
    logs,
    async stop() {
      if (stopped) return;
      stopped = true;
      await running.stop();
    },
  };
  instances.push(instance);
  return instance;
}

function payTool(name: string, approval?: ApprovalPolicy): HttpTool {
  return {
    type: 'HTTP',
    name,
    description: 'pays an amount',
    parameters: {
      type: 'object',
      properties: { amount: { type: 'number' } },
      required: ['amount'],
      additionalProperties: false,
    },
    execution: { method: 'POST', url: `${api.url}/pay`, param_placement: 'body' },
    auth: { type: 'api_key', mapping: [{ source: 'PAY_KEY', target: 'X-Api-Key', location: 'header' }] },
    ...(approval === undefined ? {} : { approval }),
  };
}

const LARGE_AMOUNTS: ApprovalPolicy = {
  when: [{ arg: 'amount', op: 'gt', value: 1000 }],
  reason: 'large payments need a second pair of eyes',
};

async function submit(user: string, tool: HttpTool, account = ACCOUNT): Promise<AssembledTask> {
  const task = assembledTask({
    traceId: newTraceId(),
    accountId: account,
    modelBaseUrl: model.baseUrl,
    secrets: { PAY_KEY, [MODEL_API_KEY_VAULT_ENTRY]: MODEL_KEY },
    sealFor: vaultKeys,
    userMessage: user,
    tools: [tool],
    maxSteps: 10,
  });
  await js.publish(taskAssembledSubject(account), JSON.stringify(task), {
    msgID: `${task.task_meta.trace_id}:assembled`,
  });
  return task;
}

const logOf = (task: AssembledTask) =>
  readTaskEventLog(jsm, {
    accountId: task.task_meta.account_id,
    traceId: task.task_meta.trace_id,
    throughSeq: 10_000,
  });

async function eventsUntil(task: AssembledTask, type: TaskEvent['type'], timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const events = await logOf(task);
      return events.some((event) => event.type === type) && events;
    },
    { timeoutMs, intervalMs: 100, description: `a ${type} event of ${task.task_meta.trace_id}` },
  );
}

async function statusBecomes(task: AssembledTask, status: string) {
  return waitFor(
    async () => {
      const record = await statuses.get(task.task_meta.account_id, task.task_meta.trace_id);
      return record?.status === status && record;
    },
    { timeoutMs: 15_000, intervalMs: 100, description: `status ${status}` },
  );
}

/** What the gateway does on POST /v1/tasks/{id}/approvals/{call_id}. */
async function decide(task: AssembledTask, callId: string, approve: boolean, comment?: string) {
  const traceId = task.task_meta.trace_id;
  const decided = await parkedTasks.update(ACCOUNT, traceId, (parked) => {
    const outcome = decideApproval(
      parked,
      callId,
      { approve, ...(comment === undefined ? {} : { comment }) },
      new Date(),
    );
    return outcome.ok ? outcome.parked : undefined;
  });
  expect(decided?.parked.approvals.find((a) => a.call_id === callId)?.state).toBe(
    approve ? 'approved' : 'denied',
  );
  return parkedTasks.resumeIfReady(js, ACCOUNT, traceId);
}

const paymentsOf = (amount: number) =>
  api.requests.filter((request) => (request.body as { amount?: number }).amount === amount);
const modelRequestsFor = (user: string) => model.requests.filter((request) => userText(request) === user);

describe('a tool call that needs approval', () => {
  it('parks the task and frees the executor; approved after that executor stopped, it resumes on the other one and the tool runs exactly once', async () => {
    const first = await startInstance();
    const second = await startInstance();
    const user = 'pay 7001 for the must-show';
    const task = await submit(user, payTool('pay', LARGE_AMOUNTS));

    const parkedEvents = await eventsUntil(task, 'approval_requested');
    const requested = parkedEvents.find((event) => event.type === 'approval_requested');
    expect(requested).toMatchObject({
      attempt: 1,
      data: {
        call_id: 'call_pay',
        tool: 'pay',
        arguments: { amount: 7001 },
        reason: 'large payments need a second pair of eyes',
      },
    });
    await statusBecomes(task, 'waiting_approval');
    const parked = await parkedTasks.get(ACCOUNT, task.task_meta.trace_id);
    expect(parked?.parked.approvals).toMatchObject([
      { call_id: 'call_pay', state: 'pending', seq: requested!.seq },
    ]);
    expect(parked?.parked.task).toEqual(task);
    // Acked: no executor holds the task while it waits.
    await waitFor(
      async () =>
        (await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name))
          .num_ack_pending === 0,
      { timeoutMs: 5_000, description: 'no task held by an executor' },
    );
    expect(paymentsOf(7001)).toEqual([]);

    const parker = first.logs.some((line) => line.includes('task parked')) ? first : second;
    const other = parker === first ? second : first;
    await parker.stop();
    expect(await decide(task, 'call_pay', true, 'ok by finance')).toBe(true);

    const events = await eventsUntil(task, 'done');
    expect(paymentsOf(7001)).toHaveLength(1);
    expect(paymentsOf(7001)[0]?.headers['x-api-key']).toBe(PAY_KEY);
    expect(other.logs.some((line) => line.includes('approvals decided; resuming the task'))).toBe(true);
    expect(
      events
        .filter(
          (event) =>
            event.type !== 'message_chunk' &&
            event.type !== 'step_finished' &&
            event.type !== 'tool_call_delta',
        )
        .map((event) => event.type),
    ).toEqual([
      'tool_start',
      'approval_requested',
      'approval_decided',
      'attempt_started',
      'tool_start',
      'tool_result',
      'done',
    ]);
    expect(events.find((event) => event.type === 'approval_decided')).toMatchObject({
      attempt: 2,
      data: { call_id: 'call_pay', tool: 'pay', approved: true, comment: 'ok by finance' },
    });
    expect(events.find((event) => event.type === 'attempt_started')).toMatchObject({
      data: { rerun_call_ids: ['call_pay'] },
    });
    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 2 });
    await statusBecomes(task, 'done');
    // The resumed attempt deleted the parked entry once its decisions were written.
    await waitFor(async () => (await parkedTasks.get(ACCOUNT, task.task_meta.trace_id)) === undefined, {
      description: 'the parked entry deleted',
    });
  });

  it('denied, the call reaches the model as a tool error carrying the comment, and the task goes on to done', async () => {
    await startInstance();
    const user = 'pay 9000 to the unknown vendor';
    const task = await submit(user, payTool('pay', LARGE_AMOUNTS));
    await statusBecomes(task, 'waiting_approval');
    await decide(task, 'call_pay', false, 'vendor not on the allow-list');

    const events = await eventsUntil(task, 'done');
    expect(paymentsOf(9000)).toEqual([]);
    const expected = {
      code: 'FORBIDDEN',
      message: 'the call was denied by an approver: vendor not on the allow-list',
    };
    expect(events.find((event) => event.type === 'tool_result')).toMatchObject({
      data: { call_id: 'call_pay', ok: false, error: expected },
    });
    const last = modelRequestsFor(user).at(-1)!.body as ChatCompletionRequest['body'];
    const toolMessage = last.messages.find((m) => m.role === 'tool');
    expect(toolMessage).toMatchObject({ tool_call_id: 'call_pay' });
    expect(JSON.parse(String(toolMessage?.content))).toMatchObject({ error: expected });
    expect(events.at(-1)).toMatchObject({ type: 'done' });
  });

  it('undecided past its timeout, the task ends with APPROVAL_TIMEOUT naming the call and the timeout', async () => {
    await startInstance();
    const user = 'pay_slow 20 for a slow approver';
    const task = await submit(user, payTool('pay_slow', { timeout_ms: 1000 }));

    const events = await eventsUntil(task, 'error');
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      data: { code: 'APPROVAL_TIMEOUT', retryable: false },
    });
    const message = (events.at(-1) as { data: { message: string } }).data.message;
    expect(message).toContain('call_pay of pay_slow');
    expect(message).toContain('1000 ms');
    expect(paymentsOf(20)).toEqual([]);
    await statusBecomes(task, 'error');
  });

  it("when a task that used the model times out waiting for approval, or is cancelled while parked, what it spent is added to its account's day", async () => {
    await startInstance();
    const account = 'acme-parked-spend';
    const usage = new AccountUsageStore((await openMeshBuckets(js, { only: ['accountUsage'] })).accountUsage);
    const timedOut = await submit(
      'pay_spent 40 then wait',
      payTool('pay_spent', { timeout_ms: 1000 }),
      account,
    );
    const cancelled = await submit('pay_spent 50 then cancel', payTool('pay_spent', {}), account);
    const cancelledId = cancelled.task_meta.trace_id;
    await statusBecomes(cancelled, 'waiting_approval');
    await parkedTasks.update(account, cancelledId, (parked) => cancelApprovals(parked, new Date()));
    expect(await parkedTasks.resumeIfReady(js, account, cancelledId)).toBe(true);

    const spent = await Promise.all(
      [timedOut, cancelled].map(async (task) => {
        const events = await eventsUntil(task, 'error');
        const step = events.findLast((event) => event.type === 'step_finished');
        return step?.type === 'step_finished' ? step.data.total_usage.total_tokens : 0;
      }),
    );
    expect(spent.every((tokens) => tokens > 0)).toBe(true);
    const day = await waitFor(
      async () => {
        const today = await usage.get(account, utcDay(new Date()));
        return today.tasks >= 2 && today;
      },
      { timeoutMs: 10_000, description: "both tasks added to the account's day" },
    );
    expect(day).toMatchObject({ tasks: 2, total_tokens: spent[0]! + spent[1]! });
  });

  it('an executor started after the approval expired ends the task with APPROVAL_TIMEOUT', async () => {
    const parker = await startInstance();
    const task = await submit('pay_late 30 while nobody watches', payTool('pay_late', { timeout_ms: 2000 }));
    await statusBecomes(task, 'waiting_approval');
    await parker.stop();
    const entry = await parkedTasks.get(ACCOUNT, task.task_meta.trace_id);
    const expiry = Date.parse(entry!.parked.approvals[0]!.expires_at);
    await waitFor(() => Date.now() > expiry, { timeoutMs: 5_000, description: 'the expiry passing' });
    // Nobody watched when it expired: the executor started now finds it due.
    expect((await parkedTasks.get(ACCOUNT, task.task_meta.trace_id))?.parked.approvals[0]?.state).toBe(
      'pending',
    );

    await startInstance();
    const events = await eventsUntil(task, 'error');
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'APPROVAL_TIMEOUT' } });
  });

  it('a rule on the arguments: an amount of 50 runs without approval, one of 5000 parks', async () => {
    await startInstance();
    const small = await submit('pay 50 for coffee', payTool('pay', LARGE_AMOUNTS));
    const large = await submit('pay 5000 for a server', payTool('pay', LARGE_AMOUNTS));

    const smallEvents = await eventsUntil(small, 'done');
    expect(smallEvents.some((event) => event.type === 'approval_requested')).toBe(false);
    expect(paymentsOf(50)).toHaveLength(1);
    await statusBecomes(large, 'waiting_approval');
    expect(
      (await logOf(large))
        .map((event) => event.type)
        .filter((type) => type !== 'step_finished' && type !== 'tool_call_delta'),
    ).toEqual(['tool_start', 'approval_requested']);
    expect(paymentsOf(5000)).toEqual([]);
  });

  it('cancelled while it waits (what the gateway does: cancel the approvals, queue it), the task ends with CANCELLED and the tool never runs', async () => {
    await startInstance();
    const task = await submit('pay 8100 then change my mind', payTool('pay', LARGE_AMOUNTS));
    const traceId = task.task_meta.trace_id;
    await statusBecomes(task, 'waiting_approval');
    await parkedTasks.update(ACCOUNT, traceId, (parked) => cancelApprovals(parked, new Date()));
    expect(await parkedTasks.resumeIfReady(js, ACCOUNT, traceId)).toBe(true);

    const events = await eventsUntil(task, 'error');
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(paymentsOf(8100)).toEqual([]);
    await statusBecomes(task, 'cancelled');
  });

  it('a redelivery of the delivery that parked the task (not the queued-again one) is acked without running it, and the status says waiting_approval again', async () => {
    const parker = await startInstance();
    const task = await submit('pay 8200 twice over', payTool('pay', LARGE_AMOUNTS));
    await statusBecomes(task, 'waiting_approval');
    await parker.stop();
    // As a delivery that ran before it knew the task was parked leaves it (a first delivery writes
    // `running` without reading the log).
    await statuses.update(ACCOUNT, task.task_meta.trace_id, (current) => ({
      ...current!,
      status: 'running',
    }));
    const before = await logOf(task);
    // The parking delivery comes again (as when its ack was lost): taken and handed back here, it is
    // delivered to the executor with a count of 2 and without the queued-again header.
    await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), {
      msgID: `${task.task_meta.trace_id}:again`,
    });
    const taken = await js.consumers
      .get(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name)
      .then((consumer) => consumer.next({ expires: 5_000 }));
    expect(taken?.info.deliveryCount).toBe(1);
    taken!.nak();
    const second = await startInstance();
    await waitFor(
      async () => {
        const info = await jsm.consumers.info(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name);
        const settled = info.num_pending === 0 && info.num_ack_pending === 0;
        return (
          settled && second.logs.some((line) => line.includes('task attempt') || line.includes('dropping'))
        );
      },
      { timeoutMs: 15_000, description: 'the redelivery taken and acked' },
    );
    expect(await logOf(task)).toEqual(before);
    expect((await statuses.get(ACCOUNT, task.task_meta.trace_id))?.status).toBe('waiting_approval');
    expect((await parkedTasks.get(ACCOUNT, task.task_meta.trace_id))?.parked.approvals[0]?.state).toBe(
      'pending',
    );
    expect(paymentsOf(8200)).toEqual([]);
  });

  it('a cancel requested while a stray delivery had the status say running reaches the parked task: it ends CANCELLED', async () => {
    const parker = await startInstance();
    const task = await submit('pay 8500 and cancel in the gap', payTool('pay', LARGE_AMOUNTS));
    const traceId = task.task_meta.trace_id;
    await statusBecomes(task, 'waiting_approval');
    await parker.stop();
    await statuses.update(ACCOUNT, traceId, (current) => ({
      ...current!,
      status: 'running',
      cancel_requested_at: new Date().toISOString(),
    }));
    await js.publish(taskAssembledSubject(ACCOUNT), JSON.stringify(task), { msgID: `${traceId}:stray` });
    const taken = await js.consumers
      .get(Consumers.EXECUTOR.stream, Consumers.EXECUTOR.durable_name)
      .then((consumer) => consumer.next({ expires: 5_000 }));
    taken!.nak();
    await startInstance();

    const events = await eventsUntil(task, 'error');
    expect(events.at(-1)).toMatchObject({ type: 'error', data: { code: 'CANCELLED' } });
    expect(paymentsOf(8500)).toEqual([]);
    await statusBecomes(task, 'cancelled');
  });

  it('decided by someone who died before queuing the task, it is queued by an executor after the grace period', async () => {
    await startInstance({ APPROVAL_REQUEUE_GRACE_MS: '500' });
    const task = await submit('pay 8300 then vanish', payTool('pay', LARGE_AMOUNTS));
    const traceId = task.task_meta.trace_id;
    await statusBecomes(task, 'waiting_approval');
    await parkedTasks.update(ACCOUNT, traceId, (parked) => {
      const outcome = decideApproval(parked, 'call_pay', { approve: true }, new Date());
      return outcome.ok ? outcome.parked : undefined;
    });

    const events = await eventsUntil(task, 'done');
    expect(events.at(-1)).toMatchObject({ type: 'done' });
    expect(paymentsOf(8300)).toHaveLength(1);
  });

  it('when the attempt that wrote the decisions died before deleting the parked entry, the next delivery deletes it and the task ends done', async () => {
    const parker = await startInstance();
    const task = await submit('pay 8400 and crash after deciding', payTool('pay', LARGE_AMOUNTS));
    const traceId = task.task_meta.trace_id;
    await statusBecomes(task, 'waiting_approval');
    await parker.stop();
    await parkedTasks.update(ACCOUNT, traceId, (parked) => {
      const outcome = decideApproval(parked, 'call_pay', { approve: true }, new Date());
      return outcome.ok ? outcome.parked : undefined;
    });
    // Attempt 2 wrote the decision, then died (its queued-again message comes back once more).
    const writer = await TaskEventWriter.open(js, jsm, { accountId: ACCOUNT, traceId, attempt: 2 });
    await writer.emit('approval_decided', {
      call_id: 'call_pay',
      tool: 'pay',
      approved: true,
      decided_at: new Date().toISOString(),
    });
    expect(await parkedTasks.resumeIfReady(js, ACCOUNT, traceId)).toBe(true);

    await startInstance();
    const events = await eventsUntil(task, 'done');
    expect(events.filter((event) => event.type === 'approval_decided')).toHaveLength(1);
    expect(paymentsOf(8400)).toHaveLength(1);
    await waitFor(async () => (await parkedTasks.get(ACCOUNT, traceId)) === undefined, {
      description: 'the left entry deleted',
    });
  });

  it('approved five times in a row, a task does not run out of attempts (parking is not a failed attempt)', async () => {
    await startInstance({ MAX_DELIVER: '2' });
    const task = await submit('pay_often 6000 five times', payTool('pay_often', LARGE_AMOUNTS));
    const traceId = task.task_meta.trace_id;
    for (let call = 1; call <= 5; call++) {
      const callId = `call_often_${call}`;
      await waitFor(
        async () =>
          (await parkedTasks.get(ACCOUNT, traceId))?.parked.approvals.some(
            (approval) => approval.call_id === callId && approval.state === 'pending',
          ),
        { timeoutMs: 15_000, intervalMs: 50, description: `the approval of ${callId}` },
      );
      await decide(task, callId, true);
    }
    const events = await eventsUntil(task, 'done');
    expect(events.filter((event) => event.type === 'approval_decided')).toHaveLength(5);
    expect(events.at(-1)).toMatchObject({ type: 'done', attempt: 6 });
    for (let paid = 0; paid < 5; paid++) expect(paymentsOf(6000 + paid)).toHaveLength(1);
  });
});
