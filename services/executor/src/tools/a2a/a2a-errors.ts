// The expected ways an A2A tool call fails, one class per condition. Thrown inside tools/a2a/ and turned
// into a tool outcome at `A2aToolRunner.run`, so they never reach the loop as exceptions.
import { ErrorCode } from '@agentmesh/protocol';
import { ToolCallError } from '../tool-errors.js';

/** The Agent Card could not be read: unreachable, not JSON, too large, or without an interface we speak. */
export class AgentCardError extends ToolCallError {
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
}

/**
 * The card sends calls to another origin than its own URL while the tool carries a credential: the
 * credential goes to the card's origin only, so a card (or whoever changed it) cannot send it elsewhere.
 */
export class CredentialOriginError extends ToolCallError {
  readonly code = ErrorCode.FORBIDDEN;
}

/** The remote agent could not be reached, or the exchange broke off before the task ended. */
export class RemoteAgentUnreachableError extends ToolCallError {
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
}

/** The remote agent refused the request's credentials (HTTP 401/403, or the task asks for authentication). */
export class RemoteAgentAuthError extends ToolCallError {
  readonly code = ErrorCode.UNAUTHORIZED;
}

/** The remote task ended failed, rejected or canceled (not by us), or answered a JSON-RPC error. */
export class RemoteTaskFailedError extends ToolCallError {
  readonly code = ErrorCode.TOOL_ERROR;
}

/** The remote task stopped to ask for more input; a new call can answer it with a fuller message. */
export class RemoteInputRequiredError extends ToolCallError {
  readonly code = ErrorCode.TOOL_ERROR;
}
