/**
 * A task as an executor parks it for approval (a ParkedTask of `mesh_parked_tasks`), for tests of what
 * people do with it (the gateway's approval API, the CLI, the console) without an executor parking one.
 * Its vault is schema-valid but opens nowhere: a test that needs it to run seals a real one.
 */
import {
  ApprovalState,
  ParkedTask,
  SEALED_VAULT_ALGORITHM,
  taskAssembledSubject,
  type AssembledTask,
} from '@agentmesh/protocol';

export interface ParkedTaskFixtureOptions {
  traceId: string;
  accountId: string;
  /** One pending approval per call id. */
  callIds: readonly string[];
  tool?: string;
  reason?: string;
  now?: Date;
  /** How long each approval waits before it expires. */
  ttlMs?: number;
  workflowId?: string;
  /** Where it is queued again; the account's assembled subject unless given. */
  subject?: string;
}

export function parkedTaskFixture(options: ParkedTaskFixtureOptions): ParkedTask {
  const now = options.now ?? new Date();
  const workflowId = options.workflowId ?? 'payments';
  const task: AssembledTask = {
    task_meta: {
      workflow_id: workflowId,
      trace_id: options.traceId,
      user_id: 'u1',
      account_id: options.accountId,
      submitted_at: now.toISOString(),
    },
    input: { messages: [{ role: 'user', content: 'pay the invoice' }], variables: {} },
    runtime_config: {
      model: {
        provider: 'openai',
        model_name: 'm',
        base_url: 'http://127.0.0.1:1/v1',
        tool_protocol: 'native',
      },
      tools: [],
      vault: { v: 1, alg: SEALED_VAULT_ALGORITHM, kid: 'k1', epk: 'ZXBr', iv: 'aXY', ct: 'Y3Q', tag: 'dGFn' },
    },
    limits: { max_steps: 10 },
  };
  return ParkedTask.parse({
    trace_id: options.traceId,
    account_id: options.accountId,
    subject: options.subject ?? taskAssembledSubject(options.accountId),
    task,
    parked_at: now.toISOString(),
    attempt: 1,
    approvals: options.callIds.map((callId, index) => ({
      call_id: callId,
      tool: options.tool ?? 'pay_invoice',
      reason: options.reason ?? 'amount above 1000',
      seq: index + 3,
      requested_at: now.toISOString(),
      expires_at: new Date(now.getTime() + (options.ttlMs ?? 600_000)).toISOString(),
      state: ApprovalState.PENDING,
    })),
  });
}
