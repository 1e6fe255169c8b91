import type { TaskEvent } from '@agentmesh/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  chunkEvent,
  doneEvent,
  errorEvent,
  sendJson,
  sendSse,
  sseFrame,
  startStandInGateway,
  TRACE_ID,
  type StandInGateway,
} from '../__fixtures__/stand-in-gateway.js';
import { USAGE } from './cli-args.js';
import { ExitCode, runCli } from './run-cli.js';

const API_KEY = 'am_test_canary_key_81f3';
const REPLY = {
  trace_id: TRACE_ID,
  events_subject: `mesh.events.acme.${TRACE_ID}`,
  events_url: `/v1/tasks/${TRACE_ID}/events`,
};
const TOOL_EVENTS: TaskEvent[] = [
  {
    trace_id: TRACE_ID,
    seq: 1,
    ts: '2026-01-01T00:00:00.000Z',
    attempt: 1,
    type: 'tool_start',
    data: { call_id: 'call_1', tool: 'search_company_basic', arguments: { keyword: '字节跳动' } },
  },
  {
    trace_id: TRACE_ID,
    seq: 2,
    ts: '2026-01-01T00:00:00.000Z',
    attempt: 1,
    type: 'tool_result',
    data: {
      call_id: 'call_1',
      tool: 'search_company_basic',
      ok: true,
      result: { Name: 'ByteDance' },
      duration_ms: 12,
    },
  },
];
const ANSWER_EVENTS = [
  ...TOOL_EVENTS,
  chunkEvent(3, 'ByteDance was '),
  chunkEvent(4, 'founded in 2012.'),
  doneEvent(5, 'x'),
];

let gateway: StandInGateway;

beforeEach(async () => {
  gateway = await startStandInGateway();
});

afterEach(async () => {
  await gateway.stop();
});

async function cli(
  argv: string[],
  env: { url?: string; apiKey?: string } = { url: gateway.url, apiKey: API_KEY },
) {
  let stdout = '';
  let stderr = '';
  const code = await runCli(argv, {
    env,
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return { code, stdout, stderr };
}

/** A gateway that accepts the submission and streams `events`. */
function serveTask(events: readonly TaskEvent[]): void {
  gateway.handle((request, response) => {
    if (request.method === 'POST') sendJson(response, 202, REPLY);
    else sendSse(response, events.map(sseFrame).join(''));
  });
}

describe('agentmesh CLI', () => {
  it.each([
    ['no command', []],
    ['an unknown command', ['launch']],
    ['submit without --workflow', ['submit', '--message', 'hi']],
    ['submit without --message', ['submit', '--workflow', 'qcc_agent']],
    ['an unknown option', ['submit', '--workflow', 'w', '--message', 'hi', '--colour']],
    ['an option without its value', ['submit', '--workflow', 'w', '--message']],
    ['events without a trace id', ['events']],
    ['events with a negative --after', ['events', TRACE_ID, '--after', '-1']],
    ['status with two trace ids', ['status', TRACE_ID, TRACE_ID]],
    ['a --url that is not http', ['status', TRACE_ID, '--url', 'ftp://127.0.0.1']],
    ['a command option before the command', ['--follow', 'submit', '--workflow', 'w', '--message', 'hi']],
    ['approve without a call id', ['approve', TRACE_ID]],
    ['deny with a third argument', ['deny', TRACE_ID, 'call_1', 'extra']],
    ['approve with an empty --comment', ['approve', TRACE_ID, 'call_1', '--comment', '']],
    ['approvals without a trace id', ['approvals']],
  ])('when given %s, it exits 2 with the usage text and sends nothing', async (_case, argv) => {
    const { code, stdout, stderr } = await cli(argv);

    expect(code).toBe(ExitCode.USAGE);
    expect(stderr).toMatch(/^agentmesh: .+\n/);
    expect(stderr).toContain(USAGE);
    expect(stdout).toBe('');
    expect(gateway.requests).toHaveLength(0);
  });

  it('when asked for help, it prints the usage on stdout and exits 0', async () => {
    const { code, stdout } = await cli(['--help']);

    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe(USAGE);
  });

  it('submit --follow streams the answer to stdout, one line per tool event to stderr, and exits 0 on done', async () => {
    serveTask(ANSWER_EVENTS);

    const { code, stdout, stderr } = await cli([
      'submit',
      '-w',
      'qcc_agent',
      '-m',
      '查一下字节跳动',
      '--user',
      'u1',
      '--idempotency-key',
      'k1',
      '--follow',
    ]);

    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe('ByteDance was founded in 2012.\n');
    expect(stderr.split('\n').filter(Boolean)).toEqual([
      `trace_id ${TRACE_ID}`,
      '[tool] search_company_basic {"keyword":"字节跳动"}',
      '[tool] search_company_basic ok (12 ms)',
    ]);
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({
      workflow_id: 'qcc_agent',
      user_id: 'u1',
      messages: [{ role: 'user', content: '查一下字节跳动' }],
      idempotency_key: 'k1',
    });
    expect(gateway.requests[0]!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(stdout + stderr).not.toContain(API_KEY);
  });

  it('submit --follow of a task a new attempt resumed mid-answer restarts the answer on a fresh line, so the last line is the answer', async () => {
    const resumed: TaskEvent = {
      trace_id: TRACE_ID,
      seq: 4,
      ts: '2026-01-01T00:00:01.000Z',
      attempt: 2,
      type: 'attempt_started',
      data: { drop_text_after_seq: 2, resumed_steps: 1, resumed_tool_results: 1, rerun_call_ids: [] },
    };
    const secondAttempt = (event: TaskEvent): TaskEvent => ({ ...event, attempt: 2 });
    serveTask([
      ...TOOL_EVENTS,
      chunkEvent(3, 'ByteDance w'),
      resumed,
      secondAttempt(chunkEvent(5, 'ByteDance was founded in 2012.')),
      secondAttempt(doneEvent(6, 'ByteDance was founded in 2012.')),
    ]);

    const { code, stdout, stderr } = await cli(['submit', '-w', 'qcc_agent', '-m', 'hi', '--follow']);

    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe('ByteDance w\nByteDance was founded in 2012.\n');
    expect(stderr).toContain('[attempt 2] the task resumed');
    expect(stderr).toContain('the answer restarts:');
  });

  it('submit --follow --json prints every event as one JSON line on stdout', async () => {
    serveTask(ANSWER_EVENTS);

    const { code, stdout } = await cli(['submit', '-w', 'qcc_agent', '-m', 'hi', '--follow', '--json']);

    expect(code).toBe(ExitCode.OK);
    expect(
      stdout
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line) as unknown),
    ).toEqual(ANSWER_EVENTS);
  });

  it('submit without --follow prints the trace id and exits 0', async () => {
    serveTask([]);

    const { code, stdout } = await cli(['submit', '-w', 'qcc_agent', '-m', 'hi']);

    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe(`${TRACE_ID}\n`);
    expect(gateway.requests).toHaveLength(1);
  });

  it('when the task ends with an error event, it prints the code and message on stderr and exits 1', async () => {
    serveTask([chunkEvent(1, 'Let me'), errorEvent(2, 'LLM_ERROR', 'the model refused')]);

    const { code, stdout, stderr } = await cli(['events', TRACE_ID]);

    expect(code).toBe(ExitCode.FAILED);
    expect(stdout).toBe('Let me\n');
    expect(stderr).toBe('error LLM_ERROR: the model refused\n');
  });

  it('when the gateway answers an error body, it prints {code, message} on stderr and exits 1', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 404, { code: 'NOT_FOUND', message: `no task ${TRACE_ID}` }),
    );

    const human = await cli(['status', TRACE_ID]);
    const json = await cli(['events', TRACE_ID, '--json']);

    expect(human).toMatchObject({
      code: ExitCode.FAILED,
      stdout: '',
      stderr: `error NOT_FOUND: no task ${TRACE_ID}\n`,
    });
    expect(json.code).toBe(ExitCode.FAILED);
    expect(JSON.parse(json.stderr)).toEqual({ code: 'NOT_FOUND', message: `no task ${TRACE_ID}` });
  });

  it('events --after the last event of a finished task exits by the task status (0 for done)', async () => {
    gateway.handle((request, response) => {
      if (request.path.endsWith('/events')) return void response.writeHead(204).end();
      sendJson(response, 200, {
        trace_id: TRACE_ID,
        account_id: 'acme',
        workflow_id: 'qcc_agent',
        status: 'done',
        attempt: 1,
        updated_at: '2026-01-01T00:00:01.000Z',
        last_seq: 5,
      });
    });

    const { code, stdout } = await cli(['events', TRACE_ID, '--after', '5']);

    expect(code).toBe(ExitCode.OK);
    expect(stdout).toBe('');
    expect(gateway.requests[0]!.headers['last-event-id']).toBe('5');
  });

  it('flags win over the environment, and the environment over the default URL', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 409, { code: 'CONFLICT', message: 'already ended' }),
    );

    const { code, stderr } = await cli(
      ['cancel', TRACE_ID, '--url', gateway.url, '--api-key', 'flag-key', '--account', 'acme'],
      {
        url: 'http://127.0.0.1:1',
        apiKey: 'env-key',
      },
    );

    expect(code).toBe(ExitCode.FAILED);
    expect(stderr).toBe('error CONFLICT: already ended\n');
    expect(gateway.requests[0]!.headers).toMatchObject({
      authorization: 'Bearer flag-key',
      'x-account-id': 'acme',
    });
  });

  it('connection options before the command (as `agentmesh --url … status …`) work like after it', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 409, { code: 'CONFLICT', message: 'already ended' }),
    );

    const { code, stderr } = await cli(
      ['--url', gateway.url, '--account=acme', '--api-key', 'flag-key', 'cancel', TRACE_ID],
      { url: 'http://127.0.0.1:1' },
    );

    expect(code).toBe(ExitCode.FAILED);
    expect(stderr).toBe('error CONFLICT: already ended\n');
    expect(gateway.requests[0]!.headers).toMatchObject({
      authorization: 'Bearer flag-key',
      'x-account-id': 'acme',
    });
  });

  describe('approvals', () => {
    const pending = {
      call_id: 'call_1',
      tool: 'pay_invoice',
      reason: 'amount above 1000',
      seq: 3,
      requested_at: '2026-01-01T00:00:01.000Z',
      expires_at: '2026-01-01T01:00:01.000Z',
      state: 'pending',
    };

    it('approvals lists the pending calls with tool, reason and expiry, and how many the task still waits on', async () => {
      gateway.handle((_request, response) =>
        sendJson(response, 200, { trace_id: TRACE_ID, resumed: false, approvals: [pending] }),
      );

      const { code, stdout } = await cli(['approvals', TRACE_ID]);

      expect(code).toBe(ExitCode.OK);
      expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: `/v1/tasks/${TRACE_ID}/approvals` });
      expect(stdout).toBe(
        `call_1 pending pay_invoice: amount above 1000 (expires 2026-01-01T01:00:01.000Z)\ntask ${TRACE_ID} still waits on 1 approval\n`,
      );
    });

    it('deny --comment POSTs {approve: false, comment} for the call and prints its state and that the task goes on', async () => {
      gateway.handle((_request, response) =>
        sendJson(response, 200, {
          trace_id: TRACE_ID,
          resumed: true,
          approvals: [{ ...pending, state: 'denied', comment: 'no', decided_at: '2026-01-01T00:00:09.000Z' }],
        }),
      );

      const { code, stdout } = await cli(['deny', TRACE_ID, 'call_1', '--comment', 'no']);

      expect(code).toBe(ExitCode.OK);
      expect(gateway.requests[0]).toMatchObject({
        method: 'POST',
        path: `/v1/tasks/${TRACE_ID}/approvals/call_1`,
      });
      expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ approve: false, comment: 'no' });
      expect(stdout).toBe(`call_1 denied\ntask ${TRACE_ID} is queued to go on\n`);
    });

    it('when the call was decided otherwise already, approve exits 1 with error CONFLICT on stderr', async () => {
      gateway.handle((_request, response) =>
        sendJson(response, 409, {
          code: 'CONFLICT',
          message: 'the approval of call call_1 is denied already',
          detail: { call_id: 'call_1', state: 'denied' },
        }),
      );

      const { code, stderr } = await cli(['approve', TRACE_ID, 'call_1']);

      expect(code).toBe(ExitCode.FAILED);
      expect(JSON.parse(gateway.requests[0]!.body)).toEqual({ approve: true });
      expect(stderr).toContain('error CONFLICT: the approval of call call_1 is denied already');
    });
  });
});

describe('agentmesh threads', () => {
  const THREAD = {
    thread_id: 'support-42',
    created_at: '2026-01-01T00:00:00.000Z',
    updated_at: '2026-01-01T00:00:00.000Z',
    metadata: { title: 'help' },
    strategy: 'enqueue',
    status: 'idle',
    queued_trace_ids: [],
  };

  it('when a thread is created with a strategy, compaction and retention, the request carries them and its id is printed', async () => {
    gateway.handle((_request, response) => sendJson(response, 201, THREAD));
    const run = await cli([
      'threads',
      'create',
      '--id',
      'support-42',
      '--strategy',
      'enqueue',
      '--metadata',
      '{"title":"help"}',
      '--max-history-tokens',
      '2000',
      '--compaction',
      'summarise',
      '--max-turns',
      '20',
      '--max-age-seconds',
      '86400',
    ]);
    expect(run).toMatchObject({ code: ExitCode.OK, stdout: 'support-42\n' });
    expect(gateway.requests[0]).toMatchObject({ method: 'POST', path: '/v1/threads' });
    expect(JSON.parse(gateway.requests[0]!.body)).toEqual({
      thread_id: 'support-42',
      strategy: 'enqueue',
      metadata: { title: 'help' },
      compaction: { max_history_tokens: 2000, policy: 'summarise', keep_turns: 4 },
      retention: { max_age_seconds: 86400, max_turns: 20 },
    });
  });

  it('when a thread is shown, its turns print with their tool calls and results', async () => {
    gateway.handle((_request, response) =>
      sendJson(response, 200, {
        ...THREAD,
        runs: [TRACE_ID],
        messages: [],
        entries: [
          {
            seq: 3,
            entry: {
              type: 'turn',
              trace_id: TRACE_ID,
              at: '2026-01-01T00:00:00.000Z',
              messages: [
                { role: 'user', content: 'who founded it?' },
                {
                  role: 'assistant',
                  content: null,
                  tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{}' } }],
                },
                { role: 'tool', tool_call_id: 'c1', content: '{"founder":"Zhang"}' },
                { role: 'assistant', content: 'Zhang.' },
              ],
            },
          },
        ],
      }),
    );
    const run = await cli(['threads', 'show', 'support-42']);
    expect(run.code).toBe(ExitCode.OK);
    expect(run.stdout).toContain('lookup({})');
    expect(run.stdout).toContain('tool: {"founder":"Zhang"}');
    expect(run.stdout).toContain('assistant: Zhang.');
    expect(gateway.requests[0]).toMatchObject({ method: 'GET', path: '/v1/threads/support-42' });
  });

  it('when submit names a thread and a strategy, the submission carries them; a strategy alone is bad usage', async () => {
    serveTask([doneEvent(1, 'ok')]);
    const run = await cli([
      'submit',
      '-w',
      'chat',
      '-m',
      'hi',
      '--thread',
      'support-42',
      '--strategy',
      'interrupt',
    ]);
    expect(run.code).toBe(ExitCode.OK);
    expect(JSON.parse(gateway.requests[0]!.body)).toMatchObject({
      thread_id: 'support-42',
      thread_strategy: 'interrupt',
    });
    expect((await cli(['submit', '-w', 'chat', '-m', 'hi', '--strategy', 'interrupt'])).code).toBe(
      ExitCode.USAGE,
    );
    expect(
      (await cli(['submit', '-w', 'chat', '-m', 'hi', '--thread', 't', '--strategy', 'loud'])).code,
    ).toBe(ExitCode.USAGE);
  });
});
