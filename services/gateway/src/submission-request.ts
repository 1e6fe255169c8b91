/**
 * A submission body, validated and bound to the caller's account: either a SubmitTaskRequest (the
 * assembler will look the agent up) or, from privileged callers, a seed-001 pre-assembled payload.
 * What comes out knows how to build the ReceivedTask for a given trace id, because a pre-assembled
 * vault is sealed for exactly one task (its binding covers the trace id and everything else of it).
 */
import {
  isPreAssembledSubmission,
  parseWorkflowRef,
  PreAssembledTaskRequest,
  ReceivedTask,
  SubmitTaskRequest,
  type TaskMeta,
  type ThreadStrategy,
  type TaskParent,
  type TaskWebhookRequest,
} from '@agentmesh/protocol';
import type { SealFor } from '@agentmesh/vault';
import { requireAccount, requirePrivileged, type Caller } from './auth.js';
import { Forbidden, InvalidRequest, Rejection } from './errors.js';
import { convertRuntimeConfig, sealPreAssembledTask } from './pre-assembled.js';

export interface Submission {
  accountId: string;
  /** The agent's workflow id, without a pin. */
  workflowId: string;
  /** A seed-001 payload carrying its own agent: no registry lookup applies to it. */
  preAssembled: boolean;
  /** The agent version the submission pinned (`workflow_id@version`); absent: the current one. */
  agentVersion?: number;
  /** The upstream's own trace id, normalised. */
  traceId?: string;
  idempotencyKey?: string;
  /** The thread the task runs in, and what to do when the thread is busy (the thread's own strategy when absent). */
  threadId?: string;
  threadStrategy?: ThreadStrategy;
  /** The task's own webhook (`webhook` of a SubmitTaskRequest): checked and stored by the submitter. */
  webhook?: TaskWebhookRequest;
  /**
   * The request as validated (defaults applied, ids normalised, unknown fields dropped): what an
   * idempotency key is bound to, so two bodies that mean the same task count as the same request.
   */
  request: unknown;
  /** The task for the bus; validated against ReceivedTask. */
  build(traceId: string, submittedAt: Date): ReceivedTask | Rejection;
}

/** `parent`: set for a sub-task (the trusted NATS ingress only); a pre-assembled payload cannot be one. */
export function parseSubmission(
  body: unknown,
  caller: Caller,
  recipient: SealFor,
  parent?: TaskParent,
): Submission | Rejection {
  if (!isPreAssembledSubmission(body)) return parseSubmitRequest(body, caller, parent);
  if (parent !== undefined) return new InvalidRequest('a sub-task cannot be a pre-assembled payload');
  return parsePreAssembled(body, caller, recipient);
}

function parseSubmitRequest(
  body: unknown,
  caller: Caller,
  parent: TaskParent | undefined,
): Submission | Rejection {
  const account = requireAccount(caller);
  if (account instanceof Rejection) return account;
  const parsed = SubmitTaskRequest.safeParse(body);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error);
  const request = parsed.data;
  // Checked by the schema: `workflow_id` or `workflow_id@version`.
  const pin = parseWorkflowRef(request.workflow_id);
  return {
    accountId: account.accountId,
    workflowId: pin.workflow_id,
    preAssembled: false,
    ...optional('agentVersion', pin.version),
    request,
    ...optional('traceId', request.trace_id),
    ...optional('idempotencyKey', request.idempotency_key),
    ...optional('threadId', request.thread_id),
    ...optional('threadStrategy', request.thread_strategy),
    ...optional('webhook', request.webhook),
    build: (traceId, submittedAt) =>
      validated({
        task_meta: taskMeta({
          workflow_id: pin.workflow_id,
          agent_version: pin.version,
          trace_id: traceId,
          user_id: request.user_id,
          account_id: account.accountId,
          account_type: account.accountType,
          submitted_at: submittedAt.toISOString(),
          deadline: request.deadline,
          parent,
          thread: request.thread_id === undefined ? undefined : { thread_id: request.thread_id },
        }),
        input: { messages: request.messages, variables: request.variables ?? {} },
        // Only the budget is the submitter's; the assembler takes the smaller of it and the agent's.
        ...optional('limits', request.limits),
        ...optional('output_schema', request.output_schema),
        ...optional('idempotency_key', request.idempotency_key),
      }),
  };
}

function parsePreAssembled(body: unknown, caller: Caller, recipient: SealFor): Submission | Rejection {
  const privileged = requirePrivileged(caller, 'a pre-assembled submission');
  if (privileged instanceof Rejection) return privileged;
  const parsed = PreAssembledTaskRequest.safeParse(body);
  if (!parsed.success) return InvalidRequest.fromZod(parsed.error);
  const { task_meta: meta, input, runtime_config: runtimeConfig, limits, idempotency_key } = parsed.data;
  if (
    caller.accountId !== undefined &&
    meta.account_id !== undefined &&
    meta.account_id !== caller.accountId
  ) {
    return new Forbidden('task_meta.account_id names another account than x-account-id');
  }
  const accountId = caller.accountId ?? meta.account_id;
  if (accountId === undefined) {
    return new InvalidRequest(
      'a pre-assembled task names its account in x-account-id or task_meta.account_id',
    );
  }
  const unsealed = convertRuntimeConfig(runtimeConfig);
  const submission: Submission = {
    accountId,
    workflowId: meta.workflow_id,
    preAssembled: true,
    request: parsed.data,
    ...optional('traceId', meta.trace_id),
    ...optional('idempotencyKey', idempotency_key),
    build: (traceId, submittedAt) => {
      const sealed = sealPreAssembledTask(
        {
          task_meta: taskMeta({
            workflow_id: meta.workflow_id,
            trace_id: traceId,
            user_id: meta.user_id,
            account_id: accountId,
            account_type: caller.accountType ?? meta.account_type,
            submitted_at: meta.submitted_at ?? submittedAt.toISOString(),
            deadline: meta.deadline,
          }),
          input,
          limits,
        },
        unsealed,
        recipient,
      );
      if (!sealed.ok) return InvalidRequest.fromZod(sealed.error);
      // Every part was parsed with the bus schemas before sealing; the key was parsed with the request.
      const task: ReceivedTask = { ...sealed.task, ...optional('idempotency_key', idempotency_key) };
      return task;
    },
  };
  // Fail now, not after the idempotency key is claimed, when the converted tools do not form a valid
  // task (two seed tool names mapping to one function name, say).
  const probe = submission.build(PROBE_TRACE_ID, new Date());
  return probe instanceof Rejection ? probe : submission;
}

const PROBE_TRACE_ID = '0'.repeat(31) + '1';

function taskMeta(meta: { [K in keyof TaskMeta]: TaskMeta[K] | undefined }): TaskMeta {
  return Object.fromEntries(Object.entries(meta).filter(([, value]) => value !== undefined)) as TaskMeta;
}

function validated(task: unknown): ReceivedTask | Rejection {
  const parsed = ReceivedTask.safeParse(task);
  return parsed.success ? parsed.data : InvalidRequest.fromZod(parsed.error);
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
