/**
 * The expected ways a received task cannot be assembled. Each ends the task with one `error` event carrying
 * its code, message and detail; none carries a credential value, only names.
 */
import { ErrorCode, type EventData } from '@agentmesh/protocol';

export abstract class AssemblyError extends Error {
  abstract readonly code: ErrorCode;
  readonly retryable: boolean = false;
  abstract readonly detail: Record<string, unknown> | undefined;

  /** The `data` of the task's terminal `error` event. */
  toEventData(): EventData<'error'> {
    return {
      code: this.code,
      message: this.message,
      retryable: this.retryable,
      ...(this.detail === undefined ? {} : { detail: this.detail }),
    };
  }
}

/** No agent is stored under the task's workflow_id. */
export class AgentNotFoundError extends AssemblyError {
  override readonly name = 'AgentNotFoundError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { workflow_id: string };

  constructor(workflowId: string) {
    super(`no agent is registered under workflow_id "${workflowId}"`);
    this.detail = { workflow_id: workflowId };
  }
}

/** The task pins a version (`workflow_id@version`) its agent does not have (or no longer keeps). */
export class AgentVersionNotFoundError extends AssemblyError {
  override readonly name = 'AgentVersionNotFoundError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { workflow_id: string; version: number };

  constructor(workflowId: string, version: number) {
    super(`agent "${workflowId}" has no version ${version} (or it is no longer kept)`);
    this.detail = { workflow_id: workflowId, version };
  }
}

/**
 * The task pins a version whose recorded tool digests (`tool_digests`, written with the version) differ
 * from the tools it would run now: a tool was changed, removed or added under that name since.
 */
export class AgentVersionToolsChangedError extends AssemblyError {
  override readonly name = 'AgentVersionToolsChangedError';
  readonly code = ErrorCode.AGENT_VERSION_TOOLS_CHANGED;
  readonly detail: { workflow_id: string; version: number; tools: string[] };

  constructor(workflowId: string, version: number, tools: string[]) {
    super(
      `agent "${workflowId}" version ${version} recorded other definitions of its tools than the registry holds now: ${tools.join(', ')}; write a new version to run the current tools`,
    );
    this.detail = { workflow_id: workflowId, version, tools };
  }
}

/** Tools the agent is bound to are not in the registry, or are disabled there. */
export class BoundToolUnavailableError extends AssemblyError {
  override readonly name = 'BoundToolUnavailableError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { workflow_id: string; missing: string[]; disabled: string[] };

  constructor(workflowId: string, missing: string[], disabled: string[]) {
    const parts = [
      ...missing.map((name) => `${name} (not in the registry)`),
      ...disabled.map((name) => `${name} (disabled)`),
    ];
    super(`agent "${workflowId}" is bound to tools that are not available: ${parts.join(', ')}`);
    this.detail = { workflow_id: workflowId, missing, disabled };
  }
}

/**
 * The agent lists sub-agents (`sub_agents`) that neither its account nor the shared catalogue holds, or
 * whose tool name (`agent_<workflow_id>`) one of its bound tools already has.
 */
export class SubAgentUnavailableError extends AssemblyError {
  override readonly name = 'SubAgentUnavailableError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { workflow_id: string; missing_sub_agents: string[]; clashing_tool_names: string[] };

  constructor(workflowId: string, missing: string[], clashing: string[]) {
    const parts = [
      ...missing.map((id) => `${id} (no such agent)`),
      ...clashing.map((name) => `${name} (a bound tool has this name)`),
    ];
    super(`agent "${workflowId}" lists sub-agents that cannot be called: ${parts.join(', ')}`);
    this.detail = { workflow_id: workflowId, missing_sub_agents: missing, clashing_tool_names: clashing };
  }
}

/** The agent binds MCP servers that neither its account nor the shared catalogue defines. */
export class McpServerUnavailableError extends AssemblyError {
  override readonly name = 'McpServerUnavailableError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { workflow_id: string; missing_mcp_servers: string[] };

  constructor(workflowId: string, missing: string[]) {
    super(`agent "${workflowId}" is bound to MCP servers that are not defined: ${missing.join(', ')}`);
    this.detail = { workflow_id: workflowId, missing_mcp_servers: missing };
  }
}

/**
 * Credentials the agent's tools or model need are stored neither for the task's user nor for its account.
 * Names only, never values; says which two sets were searched, in the order they were.
 */
export class CredentialsMissingError extends AssemblyError {
  override readonly name = 'CredentialsMissingError';
  readonly code = ErrorCode.CREDENTIALS_MISSING;
  readonly detail: {
    missing: string[];
    account_id: string;
    user_id: string;
    looked_in: ['user', 'account'];
  };

  constructor(missing: string[], accountId: string, userId: string) {
    const sorted = [...missing].sort();
    super(
      `credentials missing: ${sorted.join(', ')}; looked in the credentials of user "${userId}" of account ` +
        `"${accountId}", then in the account-wide credentials of account "${accountId}"; store them for ` +
        'the user or for the whole account',
    );
    this.detail = { missing: sorted, account_id: accountId, user_id: userId, looked_in: ['user', 'account'] };
  }
}

/**
 * The task's tools need native classes no running executor provides: published, it would wait where no
 * executor reads. Retryable: it may succeed once such an executor runs.
 */
export class NativeToolUnprovidedError extends AssemblyError {
  override readonly name = 'NativeToolUnprovidedError';
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  override readonly retryable = true;
  readonly detail: { native_classes: string[]; tools: string[] };

  constructor(classNames: string[], toolNames: string[]) {
    super(
      `no running executor provides the native tool class(es) ${classNames.join(', ')} ` +
        `that the task's tools ${toolNames.join(', ')} need`,
    );
    this.detail = { native_classes: classNames, tools: toolNames };
  }
}

/** A cancel was requested before the task was assembled: it never runs. */
export class TaskCancelledError extends AssemblyError {
  override readonly name = 'TaskCancelledError';
  readonly code = ErrorCode.CANCELLED;
  readonly detail: { cancel_requested_at: string };

  constructor(requestedAt: string) {
    super('the task was cancelled before it started');
    this.detail = { cancel_requested_at: requestedAt };
  }
}

/** Assembly kept failing (or the assembler kept crashing on this task) until its attempts ran out. */
export class AssemblyAttemptsExhaustedError extends AssemblyError {
  override readonly name = 'AssemblyAttemptsExhaustedError';
  readonly code = ErrorCode.MAX_DELIVER_EXCEEDED;
  readonly detail: { attempts: number };

  constructor(attempts: number, options?: ErrorOptions) {
    const reason =
      options?.cause instanceof Error ? `; last error: ${options.cause.name}: ${options.cause.message}` : '';
    super(`the task could not be assembled in ${attempts} attempts${reason}`, options);
    this.detail = { attempts };
  }
}

/** A record the assembler depends on is unusable (corrupt agent or credential, undecryptable secret). */
export class AssemblyFailedError extends AssemblyError {
  override readonly name = 'AssemblyFailedError';
  readonly code = ErrorCode.INTERNAL;
  readonly detail = undefined;

  constructor(cause: Error) {
    super(`the task could not be assembled: ${cause.name}: ${cause.message}`, { cause });
  }
}

/** The task names a thread its account does not have (deleted since it was submitted). */
export class ThreadNotFoundError extends AssemblyError {
  override readonly name = 'ThreadNotFoundError';
  readonly code = ErrorCode.NOT_FOUND;
  readonly detail: { thread_id: string };

  constructor(threadId: string) {
    super(`no thread "${threadId}" in the task's account`);
    this.detail = { thread_id: threadId };
  }
}
