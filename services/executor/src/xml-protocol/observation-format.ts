/**
 * `<OBSERVATION>` texts in seed 003 §3.4's formats: "Tool <id> executed successfully. Output: <json>" and
 * "Tool <id> failed. Error type: <type>. Message: <message> Details: <details>". Also reads the loop's tool
 * messages back into outcomes: the loop writes a result as its text and a tool error as
 * `{"error": {code, message, detail?}}`.
 */
import { ErrorCodeSchema, type ToolError } from '@agentmesh/protocol';
import { isJsonObject } from '@agentmesh/protocol';

/** The error type of an ACTION block the adapter could not read (seed 003 names error types this way). */
export const ACTION_FORMAT_ERROR = 'ActionFormatError';

export interface ObservedFailure {
  /** Seed 003 error type (`ScriptError`, …) when the tool gave one, else the error code. */
  readonly type: string;
  readonly message: string;
  readonly details?: string;
}

export type ToolMessageOutcome =
  { readonly ok: true; readonly output: string } | { readonly ok: false; readonly error: ToolError };

export function observationBlock(text: string): string {
  return `<OBSERVATION>${text}</OBSERVATION>`;
}

export function successObservation(toolId: string, output: string): string {
  return `Tool ${toolId} executed successfully. Output: ${output}`;
}

export function failureObservation(toolId: string, failure: ObservedFailure): string {
  const details = failure.details ? ` Details: ${failure.details}` : '';
  return `Tool ${toolId} failed. Error type: ${failure.type}. Message: ${sentence(failure.message)}${details}`;
}

/**
 * How a tool error reads to the model: a seed 003 `{type, details}` detail (what script tools report) gives
 * the type and details; any other detail is shown as JSON. `notes` come first in the details.
 */
export function observedFailure(error: ToolError, notes: readonly string[] = []): ObservedFailure {
  let type: string = error.code;
  const parts = [...notes];
  const detail = error.detail;
  if (typeof detail === 'string') {
    parts.push(detail);
  } else if (isJsonObject(detail)) {
    const { type: seedType, details, ...rest } = detail;
    if (typeof seedType === 'string' && seedType !== '') type = seedType;
    else if (seedType !== undefined) rest['type'] = seedType;
    if (typeof details === 'string') parts.push(details);
    else if (details !== undefined) rest['details'] = details;
    if (Object.keys(rest).length > 0) parts.push(JSON.stringify(rest));
  } else if (detail !== undefined) {
    parts.push(JSON.stringify(detail));
  }
  const details = parts.map((part) => part.trim()).filter((part) => part !== '');
  return details.length === 0
    ? { type, message: error.message }
    : { type, message: error.message, details: details.join('; ') };
}

/** The observation for an ACTION block that could not be read; nothing of its reply was run. */
export function actionFormatObservation(
  toolId: string | undefined,
  problem: string,
  actionsInReply: number,
): string {
  const notRun =
    actionsInReply === 1
      ? 'The ACTION was not run; write it again in the format the system prompt describes.'
      : `None of the ${actionsInReply} ACTION blocks in your reply was run; write them again in the format the system prompt describes.`;
  const failure = { type: ACTION_FORMAT_ERROR, message: problem, details: notRun };
  return toolId === undefined
    ? `An ACTION failed. Error type: ${failure.type}. Message: ${sentence(problem)} Details: ${notRun}`
    : failureObservation(toolId, failure);
}

/**
 * A tool message's outcome. Only the loop's exact error shape (a single `error` key holding a known code
 * and a message) counts as a failure, so a tool result that merely mentions an error stays a result.
 */
export function readToolMessage(content: string): ToolMessageOutcome {
  const error = errorOf(content);
  return error === undefined ? { ok: true, output: content } : { ok: false, error };
}

function errorOf(content: string): ToolError | undefined {
  if (!content.startsWith('{"error":')) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    return undefined;
  }
  if (!isJsonObject(parsed) || Object.keys(parsed).length !== 1) return undefined;
  const error = parsed['error'];
  if (!isJsonObject(error) || typeof error['message'] !== 'string') return undefined;
  const code = ErrorCodeSchema.safeParse(error['code']);
  if (!code.success) return undefined;
  const extra = Object.keys(error).filter((key) => !['code', 'message', 'detail'].includes(key));
  if (extra.length > 0) return undefined;
  return 'detail' in error
    ? { code: code.data, message: error['message'], detail: error['detail'] }
    : { code: code.data, message: error['message'] };
}

/** Ends a message with a full stop unless it already ends a sentence. */
function sentence(text: string): string {
  const trimmed = text.trim();
  return /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}
