/**
 * The ways a script run can fail, one class per condition. `type` is the seed 003 §2.1.3 error type a
 * `ScriptExecutionResult` carries; `code` and `retryable` follow the protocol's error list. The runner
 * throws these internally and `run` turns them into results, so callers who prefer exceptions get the
 * same classes back from `runOrThrow`.
 */
import { ErrorCode } from '@agentmesh/protocol';

export const ScriptErrorType = {
  /** The request would leave the sandbox (path outside the base directory, sandbox unavailable, ...). */
  SECURITY: 'SecurityError',
  /** The script ran and failed: non-zero exit, a signal, output that is not JSON or over the limit. */
  SCRIPT: 'ScriptError',
  /** The script ran past its time limit and was killed with every process it started. */
  TIMEOUT: 'TimeoutError',
  /** The script's runtime or dependency environment could not be found or built. */
  DEPENDENCY: 'DependencyError',
  /** The request itself is malformed (unknown language, input too large or not JSON, bad env name). */
  INPUT: 'InputError',
} as const;
export type ScriptErrorType = (typeof ScriptErrorType)[keyof typeof ScriptErrorType];

/** How the script's main process ended, when it ended on its own. */
export interface ExitStatus {
  readonly exitCode: number | null;
  readonly signal: string | null;
}

export interface ScriptRunnerErrorOptions extends ErrorOptions {
  /** Longer text for the caller or the model, e.g. the script's stderr. */
  readonly details?: string;
  readonly exit?: ExitStatus;
}

export abstract class ScriptRunnerError extends Error {
  abstract readonly type: ScriptErrorType;
  abstract readonly code: ErrorCode;
  abstract readonly retryable: boolean;
  readonly details: string | undefined;
  readonly exit: ExitStatus | undefined;

  constructor(message: string, options: ScriptRunnerErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.details = options.details;
    this.exit = options.exit;
  }
}

export class SecurityError extends ScriptRunnerError {
  override readonly name = 'SecurityError';
  readonly type = ScriptErrorType.SECURITY;
  readonly code = ErrorCode.FORBIDDEN;
  readonly retryable = false;
}

export class ScriptError extends ScriptRunnerError {
  override readonly name = 'ScriptError';
  readonly type = ScriptErrorType.SCRIPT;
  readonly code = ErrorCode.TOOL_ERROR;
  readonly retryable = false;
}

export class TimeoutError extends ScriptRunnerError {
  override readonly name = 'TimeoutError';
  readonly type = ScriptErrorType.TIMEOUT;
  readonly code = ErrorCode.TOOL_TIMEOUT;
  readonly retryable = true;
}

export class DependencyError extends ScriptRunnerError {
  override readonly name = 'DependencyError';
  readonly type = ScriptErrorType.DEPENDENCY;
  readonly code = ErrorCode.TOOL_ERROR;
  readonly retryable = false;
}

export class InputError extends ScriptRunnerError {
  override readonly name = 'InputError';
  readonly type = ScriptErrorType.INPUT;
  readonly code: ErrorCode;
  readonly retryable = false;

  constructor(message: string, options: ScriptRunnerErrorOptions & { tooLarge?: boolean } = {}) {
    super(message, options);
    this.code = options.tooLarge === true ? ErrorCode.PAYLOAD_TOO_LARGE : ErrorCode.INVALID_REQUEST;
  }
}
