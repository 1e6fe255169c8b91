// The expected ways an HTTP tool call fails, one class per condition. They are thrown inside the runner's
// modules and turned into a ToolOutcome at `HttpToolRunner.run`, so they never reach the loop as exceptions.
import { ErrorCode, isRetryableByDefault } from '@agentmesh/protocol';

export abstract class ToolCallError extends Error {
  abstract readonly code: ErrorCode;
  readonly detail: unknown;

  constructor(message: string, options: { detail?: unknown; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.detail = options.detail;
  }

  get retryable(): boolean {
    return isRetryableByDefault(this.code);
  }
}

/** The model's arguments cannot be put into the request (missing path argument, line break in a header). */
export class InvalidToolArgumentsError extends ToolCallError {
  readonly code = ErrorCode.INVALID_REQUEST;
}

/**
 * A tool argument (or a dynamic tool's fixed parameter) aimed at a header that routes or frames the request
 * (Host, Connection, Content-Length, Transfer-Encoding, Proxy-*, ...): those are the HTTP client's to set.
 */
export class ProtectedHeaderError extends ToolCallError {
  readonly code = ErrorCode.FORBIDDEN;
  readonly header: string;

  constructor(name: string) {
    super(
      `header ${name} cannot be set from a tool call: headers that route or frame the request (Host, Connection, Content-Length, Transfer-Encoding, Proxy-*, ...) are the HTTP client's own`,
      { detail: { header: name.toLowerCase() } },
    );
    this.header = name.toLowerCase();
  }
}

/** A task value a tool's `context_params` puts into a header has a line break or NUL. Names the header only. */
export class ContextValueError extends ToolCallError {
  readonly code = ErrorCode.INVALID_REQUEST;

  constructor(header: string, source: string) {
    super(`the task's ${source} cannot go into header ${header}: it contains a line break or NUL`, {
      detail: { header, source },
    });
  }
}

/** The tool definition itself cannot be executed (unsupported content type, path argument without placeholder). */
export class ToolDefinitionError extends ToolCallError {
  readonly code = ErrorCode.TOOL_ERROR;
}

/** The task's vault lacks credentials the tool's auth reads. Names the keys, never values. */
export class CredentialsMissingError extends ToolCallError {
  readonly code = ErrorCode.CREDENTIALS_MISSING;
  readonly missing: readonly string[];

  constructor(missing: readonly string[]) {
    const list = missing.join(', ');
    super(`credential${missing.length === 1 ? '' : 's'} missing from the task's vault: ${list}`, {
      detail: { missing },
    });
    this.missing = missing;
  }
}

/** The outbound guard refused the target (SSRF protection). */
export class OutboundRequestDeniedError extends ToolCallError {
  readonly code = ErrorCode.FORBIDDEN;
  readonly target: string;
  readonly reason: string;

  constructor(target: string, reason: string) {
    super(`outbound request to ${target} denied: ${reason}`, { detail: { target, reason } });
    this.target = target;
    this.reason = reason;
  }
}

/** The API could not be reached or the exchange broke off (refused connection, reset, bad redirect). */
export class UpstreamRequestError extends ToolCallError {
  readonly code = ErrorCode.TOOL_ERROR;
}

/** The OAuth2 token endpoint did not hand out a token. */
export class OAuth2TokenError extends ToolCallError {
  readonly code = ErrorCode.TOOL_ERROR;
}

/** An MCP server could not be connected to, listed or called (the exchange broke off, or it answered an error). */
export class McpServerError extends ToolCallError {
  readonly code = ErrorCode.SERVICE_UNAVAILABLE;
}

/** A tool names an MCP server the task was not assembled with (recall may only name the agent's servers). */
export class McpServerNotBoundError extends ToolCallError {
  readonly code = ErrorCode.NOT_FOUND;
}
