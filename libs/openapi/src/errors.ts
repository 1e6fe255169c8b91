// Errors of this library. Each condition is its own class carrying a code from the protocol's shared
// list (repeated here as strings: of protocol, this package takes only the naming contract) and whether
// retrying helps.
// Expected conversion problems are not errors: they become notes on the conversion.

export const OpenApiErrorCode = {
  INVALID_REQUEST: 'INVALID_REQUEST',
  NOT_FOUND: 'NOT_FOUND',
  SCHEMA_CONVERSION_ERROR: 'SCHEMA_CONVERSION_ERROR',
} as const;
export type OpenApiErrorCode = (typeof OpenApiErrorCode)[keyof typeof OpenApiErrorCode];

export abstract class OpenApiError extends Error {
  abstract readonly code: OpenApiErrorCode;
  readonly retryable: boolean = false;
  readonly detail: Record<string, unknown> | undefined;

  constructor(message: string, detail?: Record<string, unknown>, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
    this.detail = detail;
  }
}

/** The input is not an OpenAPI/Swagger document or operation this library can read. */
export class InvalidDocumentError extends OpenApiError {
  readonly code = OpenApiErrorCode.SCHEMA_CONVERSION_ERROR;
}

/** A document could not be read or parsed (file missing, bad YAML/JSON). */
export class DocumentParseError extends OpenApiError {
  readonly code = OpenApiErrorCode.SCHEMA_CONVERSION_ERROR;
}

/** A file or text holds no document at all (empty, or only comments). */
export class EmptyDocumentError extends OpenApiError {
  readonly code = OpenApiErrorCode.SCHEMA_CONVERSION_ERROR;
}

/** A document nests deeper than this library walks (or its YAML aliases make it cyclic). */
export class DocumentTooDeepError extends OpenApiError {
  readonly code = OpenApiErrorCode.SCHEMA_CONVERSION_ERROR;
}

/** A relative `$ref` pointed at a file the loader refused or could not read. */
export class ExternalReferenceError extends OpenApiError {
  readonly code = OpenApiErrorCode.SCHEMA_CONVERSION_ERROR;
}

/** No operation matches the operation id or method + path asked for. */
export class OperationNotFoundError extends OpenApiError {
  readonly code = OpenApiErrorCode.NOT_FOUND;
}

/** Tool-call arguments cannot be turned into a request (not an object, a path parameter missing, ...). */
export class InvalidArgumentsError extends OpenApiError {
  readonly code = OpenApiErrorCode.INVALID_REQUEST;
}
