// What every tool runner hands back to the executor's loop. Expected failures (bad arguments, a 500 from the
// API, a timeout) are values of this type, never exceptions: the loop passes them to the model as tool errors.
import { errorBody, type ErrorCode } from '@agentmesh/protocol';

export interface ToolFailure {
  readonly code: ErrorCode;
  /** Written for the model (and the task's events): says what went wrong and, where possible, how to fix it. */
  readonly message: string;
  readonly detail?: unknown;
}

export type ToolOutcome =
  | { readonly ok: true; readonly result: unknown; readonly truncated?: boolean }
  | { readonly ok: false; readonly error: ToolFailure };

export function toolSuccess(result: unknown, truncated = false): ToolOutcome {
  return truncated ? { ok: true, result, truncated: true } : { ok: true, result };
}

export function toolFailure(code: ErrorCode, message: string, detail?: unknown): ToolOutcome {
  return { ok: false, error: errorBody(code, message, detail) };
}
