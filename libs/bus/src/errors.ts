/** Errors of the bus layer: one class per condition, each with a protocol code and a retryable flag. */
import { ErrorCode, type TaskStatusRecord } from '@agentmesh/protocol';

/** A value read from the bus or a KV bucket does not match its contract (written by a bug or by hand). */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';
  readonly code = ErrorCode.INTERNAL;
  readonly retryable = false;

  constructor(
    readonly where: string,
    options?: ErrorOptions,
  ) {
    super(`record at ${where} does not match its schema`, options);
  }
}

/**
 * Another writer appended to a task's event stream since this writer last read it: two executors
 * believe they own the same task. The losing writer must stop.
 */
export class EventStreamConflictError extends Error {
  override readonly name = 'EventStreamConflictError';
  readonly code = ErrorCode.INTERNAL;
  readonly retryable = false;

  constructor(
    readonly traceId: string,
    options?: ErrorOptions,
  ) {
    super(`event stream of task ${traceId} was written by another writer`, options);
  }
}

/** A definition name or account id that cannot be part of a registry key (the caller did not validate it). */
export class InvalidRegistryNameError extends Error {
  override readonly name = 'InvalidRegistryNameError';
  readonly code = ErrorCode.INVALID_REQUEST;
  readonly retryable = false;

  constructor(
    readonly what: 'name' | 'account id',
    readonly value: string,
  ) {
    super(`not a valid registry ${what}: ${JSON.stringify(value.slice(0, 80))}`);
  }
}

/**
 * An AGENT tool was to be stored in the tool registry: agent tools are made by the assembler from an
 * agent's `sub_agents` (the agent is the definition), never stored as tools.
 */
export class AgentToolNotStorableError extends Error {
  override readonly name = 'AgentToolNotStorableError';
  readonly code = ErrorCode.INVALID_REQUEST;
  readonly retryable = false;

  constructor(readonly toolName: string) {
    super(
      `tool ${toolName} is of type AGENT: agent tools are not stored; list the agent's workflow_id in the calling agent's sub_agents instead`,
    );
  }
}

/**
 * KV refused a task status write for a reason other than a concurrent writer (a compare-and-set lost
 * is retried, not reported): the bucket is gone, the value is over its limit, the user may not write,
 * the server did not answer. Retryable when the server was not reached or gave no answer in time.
 */
export class TaskStatusWriteError extends Error {
  override readonly name = 'TaskStatusWriteError';
  readonly code = ErrorCode.INTERNAL;

  constructor(
    readonly key: string,
    readonly retryable: boolean,
    options: ErrorOptions & { cause: unknown },
  ) {
    super(
      `task status of ${key} could not be written: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`,
      options,
    );
  }
}

/** A task status record kept changing under every compare-and-set attempt (heavy contention). */
export class TaskStatusContentionError extends Error {
  override readonly name = 'TaskStatusContentionError';
  readonly code = ErrorCode.CONFLICT;
  readonly retryable = true;

  constructor(
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`task status of ${key} kept changing under ${attempts} updates`);
  }
}

/** An account's daily usage could not be added to (`mesh_account_usage`). */
export class AccountUsageWriteError extends Error {
  override readonly name = 'AccountUsageWriteError';
  readonly code = ErrorCode.INTERNAL;

  constructor(
    readonly key: string,
    readonly retryable: boolean,
    options: ErrorOptions & { cause: unknown },
  ) {
    super(
      `account usage ${key} could not be added to: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}`,
      options,
    );
  }
}

/**
 * A finished task none of whose events MESH_EVENTS still holds (they outlived its retention): following
 * it would wait for events that cannot come. Its final status is all that is left.
 */
export class TaskEventsExpiredError extends Error {
  override readonly name = 'TaskEventsExpiredError';
  readonly code = ErrorCode.EVENTS_EXPIRED;
  readonly retryable = false;

  constructor(
    readonly traceId: string,
    /** The task's status record (final). */
    readonly finalStatus: TaskStatusRecord,
  ) {
    super(
      `the events of task ${traceId} are no longer stored (past their retention); the task ended ${finalStatus.status}`,
    );
  }
}

/**
 * JetStream gave no answer to a publish, tried several times with the same `Nats-Msg-Id` (the server
 * away, paused, or a reconnect under way): the message may or may not be stored. Publishing it again
 * with the same id within the stream's duplicate window stores it at most once.
 */
export class PublishUnconfirmedError extends Error {
  override readonly name = 'PublishUnconfirmedError';
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  readonly retryable = true;

  constructor(
    readonly subject: string,
    readonly attempts: number,
    options: ErrorOptions & { cause: unknown },
  ) {
    super(`JetStream did not confirm a publish to ${subject} after ${attempts} tries`, options);
  }
}

/**
 * An existing stream whose subjects or republish an earlier release set, which the server refused to
 * change in place (nats-server before 2.10 cannot change a stream's republish): an operator recreates it
 * (infra/README.md, "Upgrading: followed events are republished").
 */
export class StreamUpdateRefusedError extends Error {
  override readonly name = 'StreamUpdateRefusedError';
  readonly code = ErrorCode.INTERNAL;
  readonly retryable = false;

  constructor(
    readonly stream: string,
    options: ErrorOptions & { cause: unknown },
  ) {
    super(
      `nats-server refused to update stream ${stream} to this release's subjects and republish ` +
        `(${String((options.cause as Error | undefined)?.message ?? options.cause)}); delete it as an operator ` +
        `(nats stream rm ${stream}) and run the provisioning again: see infra/README.md`,
      options,
    );
  }
}

/** A parked task's entry kept changing under every compare-and-set attempt (heavy contention). */
export class ParkedTaskContentionError extends Error {
  override readonly name = 'ParkedTaskContentionError';
  readonly code = ErrorCode.CONFLICT;
  readonly retryable = true;

  constructor(
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`parked task ${key} kept changing under ${attempts} updates`);
  }
}

/** A KV key listing did not reach the bucket's last write within its bound (a stalled or lost server). */
export class KeyListingTimeoutError extends Error {
  override readonly name = 'KeyListingTimeoutError';
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  readonly retryable = true;

  constructor(
    readonly bucket: string,
    readonly timeoutMs: number,
  ) {
    super(`listing the keys of KV ${bucket} did not finish within ${timeoutMs} ms`);
  }
}

/** A KV key listing's consumer was closed by the server or the connection before the listing ended. */
export class KeyListingClosedError extends Error {
  override readonly name = 'KeyListingClosedError';
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
  readonly retryable = true;

  constructor(
    readonly bucket: string,
    options?: ErrorOptions,
  ) {
    super(`the key listing of KV ${bucket} was closed before it ended`, options);
  }
}

/** A schedule's entry kept changing under every compare-and-set attempt (heavy contention). */
export class ScheduleContentionError extends Error {
  override readonly name = 'ScheduleContentionError';
  readonly code = ErrorCode.CONFLICT;
  readonly retryable = true;

  constructor(
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`schedule ${key} kept changing under ${attempts} updates`);
  }
}

/** A thread's record kept changing under every compare-and-set attempt (heavy contention). */
export class ThreadContentionError extends Error {
  override readonly name = 'ThreadContentionError';
  readonly code = ErrorCode.CONFLICT;
  readonly retryable = true;

  constructor(
    readonly key: string,
    readonly attempts: number,
  ) {
    super(`thread ${key} kept changing under ${attempts} updates`);
  }
}
