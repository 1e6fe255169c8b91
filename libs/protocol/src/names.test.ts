import { describe, expect, it } from 'vitest';
import {
  redriveOf,
  redrivenTaskMsgId,
  AccountId,
  Buckets,
  Consumers,
  InvalidSubjectTokenError,
  Services,
  Streams,
  Subjects,
  Wildcards,
  accountEventLogWildcard,
  accountEventsWildcard,
  accountSubmitSubject,
  cancelSubject,
  executorConsumer,
  nativeClassesToken,
  parseCancelSubject,
  parseEventLogSubject,
  parseTaskStatusSubject,
  parseEventsSubject,
  parseSubmitSubject,
  taskKey,
  parseTaskSubject,
  taskAssembledSubject,
  taskEventLogSubject,
  taskEventsSubject,
  taskReceivedSubject,
} from './names.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const UUID_ACCOUNT = 'bdb78b62-6c48-11f0-af96-fa8dcc0a06b2';
const covers = (filter: string, subject: string) =>
  new RegExp(`^${filter.replaceAll('.', '\\.').replaceAll('*', '[^.]+').replace('>', '.+')}$`).test(subject);

describe('NATS names', () => {
  it('builds the subjects of the SPEC', () => {
    expect(Subjects.GATEWAY_SUBMIT).toBe('mesh.gateway.submit');
    expect(taskReceivedSubject('acme')).toBe('mesh.tasks.received.acme');
    expect(taskAssembledSubject('acme')).toBe('mesh.tasks.assembled.acme');
    expect(taskEventsSubject('acme', TRACE)).toBe(`mesh.events.acme.${TRACE}`);
    expect(cancelSubject('acme', TRACE)).toBe(`mesh.control.cancel.acme.${TRACE}`);
    expect(accountSubmitSubject('acme')).toBe('mesh.gateway.submit.acme');
    expect(Subjects.RECALL_ACTIONS).toBe('mesh.recall.actions');
  });

  it('names the streams, consumers, micro service and buckets of the SPEC', () => {
    expect(Streams.TASKS).toEqual({ name: 'MESH_TASKS', subjects: ['mesh.tasks.>'] });
    expect(Streams.EVENTS).toEqual({
      name: 'MESH_EVENTS',
      subjects: ['mesh.eventlog.>'],
      republish: { src: 'mesh.eventlog.>', dest: 'mesh.events.>' },
    });
    expect(Streams.THREADS).toEqual({ name: 'MESH_THREADS', subjects: ['mesh.threads.>'] });
    expect(Consumers.ASSEMBLER.durable_name).toBe('assembler');
    expect(Consumers.EXECUTOR.durable_name).toBe('executor');
    expect(Services.RECALL).toEqual({ name: 'recall', subject: 'mesh.recall.actions' });
    expect(Object.values(Buckets).sort()).toEqual([
      'mesh_account_usage',
      'mesh_agents',
      'mesh_api_keys',
      'mesh_credentials',
      'mesh_idempotency',
      'mesh_mcp_servers',
      'mesh_model_limits',
      'mesh_native_providers',
      'mesh_parked_tasks',
      'mesh_recall_actions',
      'mesh_recall_tools',
      'mesh_schedule_firings',
      'mesh_schedules',
      'mesh_tasks',
      'mesh_threads',
      'mesh_tools',
      'mesh_webhook_dead_letters',
      'mesh_webhooks',
    ]);
  });

  it("each consumer's filter covers the subjects of its stage, and those lie in the tasks stream", () => {
    expect(covers(Consumers.ASSEMBLER.filter_subject, taskReceivedSubject('acme'))).toBe(true);
    expect(covers(Consumers.ASSEMBLER.filter_subject, taskAssembledSubject('acme'))).toBe(false);
    expect(covers(Consumers.EXECUTOR.filter_subject, taskAssembledSubject('acme'))).toBe(true);
    expect(covers(Streams.TASKS.subjects[0], taskAssembledSubject('acme'))).toBe(true);
    expect(covers(Streams.EVENTS.subjects[0], taskEventLogSubject('acme', TRACE))).toBe(true);
    expect(covers(accountEventLogWildcard('acme'), taskEventLogSubject('acme', TRACE))).toBe(true);
    expect(covers(accountEventLogWildcard('acme'), taskEventLogSubject('other', TRACE))).toBe(false);
    expect(covers(accountEventsWildcard('acme'), taskEventsSubject('acme', TRACE))).toBe(true);
    expect(covers(accountEventsWildcard('acme'), taskEventsSubject('other', TRACE))).toBe(false);
    expect(covers(Wildcards.ALL_CANCELS, cancelSubject('acme', TRACE))).toBe(true);
    expect(covers(Wildcards.ALL_ACCOUNT_SUBMITS, accountSubmitSubject('acme'))).toBe(true);
    expect(covers(Wildcards.ALL_ACCOUNT_SUBMITS, Subjects.GATEWAY_SUBMIT)).toBe(false);
  });

  it('the stream stores the published subjects and republishes them onto the followed ones, never onto itself', () => {
    expect(taskEventLogSubject('acme', TRACE)).toBe(`mesh.eventlog.acme.${TRACE}`);
    const { subjects, republish } = Streams.EVENTS;
    expect(covers(republish.src, taskEventLogSubject('acme', TRACE))).toBe(true);
    expect(
      taskEventLogSubject('acme', TRACE).replace(
        republish.src.replace('>', ''),
        republish.dest.replace('>', ''),
      ),
    ).toBe(taskEventsSubject('acme', TRACE));
    // A republish destination the stream captured would loop (the server refuses such a config).
    expect(covers(subjects[0], taskEventsSubject('acme', TRACE))).toBe(false);
    expect(covers(Wildcards.ALL_EVENTS, taskEventLogSubject('acme', TRACE))).toBe(false);
    expect(covers(Wildcards.ALL_EVENT_LOG, taskEventsSubject('acme', TRACE))).toBe(false);
    expect(covers(accountEventsWildcard('acme'), taskEventLogSubject('acme', TRACE))).toBe(false);
  });

  it('a UUID account id is one legal subject token', () => {
    expect(AccountId.safeParse(UUID_ACCOUNT).success).toBe(true);
    expect(taskReceivedSubject(UUID_ACCOUNT)).toBe(`mesh.tasks.received.${UUID_ACCOUNT}`);
  });

  it.each(['a.b', '*', '>', 'a b', '', 'tab\there', 'x'.repeat(129), 'acme>'])(
    'the account token %j throws instead of widening a subject',
    (account) => {
      expect(() => taskReceivedSubject(account)).toThrow(InvalidSubjectTokenError);
      expect(() => taskEventsSubject(account, TRACE)).toThrow(InvalidSubjectTokenError);
      expect(() => accountEventsWildcard(account)).toThrow(InvalidSubjectTokenError);
      expect(() => taskEventLogSubject(account, TRACE)).toThrow(InvalidSubjectTokenError);
      expect(() => accountEventLogWildcard(account)).toThrow(InvalidSubjectTokenError);
      expect(() => accountSubmitSubject(account)).toThrow(InvalidSubjectTokenError);
      expect(() => cancelSubject(account, TRACE)).toThrow(InvalidSubjectTokenError);
      expect(() => taskKey(account, TRACE)).toThrow(InvalidSubjectTokenError);
      expect(AccountId.safeParse(account).success).toBe(false);
    },
  );

  it('a trace id that is not canonical throws', () => {
    expect(() => cancelSubject('acme', '*')).toThrow(InvalidSubjectTokenError);
    expect(() => taskKey('acme', '>')).toThrow(InvalidSubjectTokenError);
    expect(() => taskEventsSubject('acme', '3f2b8c1e-9d4a-4e6b-8f1c-2a7d5e9b0c13')).toThrow(/trace id/);
  });

  it('parses task and event subjects back into their parts', () => {
    expect(parseTaskSubject(taskReceivedSubject('acme'))).toEqual({ stage: 'received', accountId: 'acme' });
    expect(parseTaskSubject(taskAssembledSubject(UUID_ACCOUNT))).toEqual({
      stage: 'assembled',
      accountId: UUID_ACCOUNT,
    });
    expect(parseEventsSubject(taskEventsSubject('acme', TRACE))).toEqual({
      accountId: 'acme',
      traceId: TRACE,
    });
    expect(parseEventLogSubject(taskEventLogSubject('acme', TRACE))).toEqual({
      accountId: 'acme',
      traceId: TRACE,
    });
    expect(parseCancelSubject(cancelSubject('acme', TRACE))).toEqual({ accountId: 'acme', traceId: TRACE });
    expect(parseTaskStatusSubject(`$KV.mesh_tasks.${taskKey('acme', TRACE)}`)).toEqual({
      accountId: 'acme',
      traceId: TRACE,
    });
    expect(parseSubmitSubject(accountSubmitSubject('acme'))).toEqual({ accountId: 'acme' });
  });

  it("a task needing native classes goes to a subject naming the set, which only that set's executor consumer covers", () => {
    const subject = taskAssembledSubject('acme', [
      'RecallActionsTool',
      'ExecuteScriptTool',
      'RecallActionsTool',
    ]);
    expect(subject).toBe('mesh.tasks.assembled.acme.ExecuteScriptTool-RecallActionsTool');
    expect(taskAssembledSubject('acme', [])).toBe('mesh.tasks.assembled.acme');
    expect(parseTaskSubject(subject)).toEqual({
      stage: 'assembled',
      accountId: 'acme',
      nativeClasses: ['ExecuteScriptTool', 'RecallActionsTool'],
    });
    const both = executorConsumer(['RecallActionsTool', 'ExecuteScriptTool']);
    expect(both.durable_name).toBe('executor-ExecuteScriptTool-RecallActionsTool');
    expect(covers(both.filter_subject, subject)).toBe(true);
    // Work-queue consumers must not overlap: no other class set's consumer sees this task.
    for (const other of [[], ['ExecuteScriptTool'], ['RecallActionsTool']]) {
      expect(covers(executorConsumer(other).filter_subject, subject)).toBe(false);
    }
    expect(covers(both.filter_subject, taskAssembledSubject('acme'))).toBe(false);
    expect(executorConsumer([])).toEqual(Consumers.EXECUTOR);
  });

  it('a native class name that is not one subject token throws instead of widening a subject', () => {
    expect(() => nativeClassesToken(['Deep.Search'])).toThrow(InvalidSubjectTokenError);
    expect(() => taskAssembledSubject('acme', ['*'])).toThrow(InvalidSubjectTokenError);
    expect(parseTaskSubject('mesh.tasks.assembled.acme.Bad*Class')).toBeUndefined();
  });

  it('two accounts using one trace id name two different tasks', () => {
    expect(taskKey('acme', TRACE)).toBe(`acme.${TRACE}`);
    expect(taskKey('acme', TRACE)).not.toBe(taskKey('globex', TRACE));
    expect(cancelSubject('acme', TRACE)).not.toBe(cancelSubject('globex', TRACE));
  });

  it('parses nothing out of subjects of another shape', () => {
    expect(parseTaskSubject('mesh.tasks.done.acme')).toBeUndefined();
    expect(parseTaskSubject('mesh.tasks.received.acme.extra')).toBeUndefined();
    expect(parseTaskSubject('mesh.tasks.received')).toBeUndefined();
    expect(parseEventsSubject(`mesh.events.acme`)).toBeUndefined();
    expect(parseEventsSubject(`mesh.events.acme.not-a-trace`)).toBeUndefined();
    expect(parseEventsSubject(taskEventLogSubject('acme', TRACE))).toBeUndefined();
    expect(parseEventLogSubject(taskEventsSubject('acme', TRACE))).toBeUndefined();
    expect(parseEventLogSubject(`mesh.eventlog.acme.${TRACE}.x`)).toBeUndefined();
    expect(parseTaskStatusSubject(`$KV.mesh_tasks.acme`)).toBeUndefined();
    expect(parseTaskStatusSubject(`$KV.mesh_agents.acme.${TRACE}`)).toBeUndefined();
    expect(parseSubmitSubject(Subjects.GATEWAY_SUBMIT)).toBeUndefined();
    expect(parseSubmitSubject('mesh.gateway.submit.acme.x')).toBeUndefined();
    expect(parseCancelSubject(`mesh.control.cancel.${TRACE}`)).toBeUndefined();
  });

  it("a re-driven task's message id names its re-drive, and only for its own account and trace", () => {
    const trace = 'a'.repeat(32);
    const id = redrivenTaskMsgId('acme', trace, 2);
    expect(id).toBe(`acme.${trace}:redrive-2`);
    expect(redriveOf(id, 'acme', trace)).toBe(2);
    expect(redriveOf(`acme.${trace}`, 'acme', trace)).toBeUndefined();
    expect(redriveOf(id, 'other', trace)).toBeUndefined();
    expect(redriveOf(id, 'acme', 'b'.repeat(32))).toBeUndefined();
    expect(redriveOf(`acme.${trace}:redrive-0`, 'acme', trace)).toBeUndefined();
    expect(redriveOf(`acme.${trace}:redrive-1x`, 'acme', trace)).toBeUndefined();
  });
});
