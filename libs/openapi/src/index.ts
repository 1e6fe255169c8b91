// @agentmesh/openapi: OpenAPI operations → OpenAI function-calling schemas, and back (arguments → HTTP
// request parts). Pure except `loadDocument`/`readDocumentFile`, which read files from disk.

export {
  convertDocument,
  convertOperation,
  convertApiSpec,
  listOperations,
  HTTP_METHODS,
} from './document-converter.js';
export type {
  DocumentConversion,
  OperationFailure,
  OperationSelector,
  OperationSummary,
  ApiSpecOptions,
} from './document-converter.js';
export { BodyKind, ParameterLocation } from './conversion.js';
export type { ArgumentBinding, BodyBinding, NullAsAbsent, OperationConversion } from './conversion.js';
export { BodyMode, DEFAULT_OPTIONS, ExampleMode, RefMode, UnionMode } from './options.js';
export type { ConversionOptions } from './options.js';
export { NoteCode } from './notes.js';
export type { ConversionNote } from './notes.js';
export type { FunctionParameters, JsonSchema, JsonSchemaType } from './json-schema.js';
export { FunctionNameRegistry, operationFunctionName } from './function-name.js';
export { buildRequestParts, decodeBinary } from './request-builder.js';
export type {
  BuildRequestOptions,
  MultipartPart,
  RequestBody,
  RequestParts,
  RequestTemplate,
} from './request-builder.js';
export { isDotSegment, templateSegments } from './path-segments.js';
export { emptyFixedParams, mapParametersByNaming, mapParametersBySchema } from './fixed-params.js';
export { summariseSecuritySchemes } from './security-schemes.js';
export type {
  SecuritySchemeSummary,
  SecuritySummaryOptions,
  SuggestedAuthConfig,
} from './security-schemes.js';
export { isSwagger2, swagger2ToOpenApi3 } from './swagger2.js';
export { BUNDLE_KEY, bundleDocument } from './bundle.js';
export type { BundleOptions, BundleResult, DocumentLoader } from './bundle.js';
export { MAX_DOCUMENT_DEPTH, parseDocumentText } from './parse-document.js';
export { loadDocument, readDocumentFile } from './load-document.js';
export type { LoadDocumentOptions } from './load-document.js';
export { listReferences } from './ref-walker.js';
export {
  DocumentParseError,
  DocumentTooDeepError,
  EmptyDocumentError,
  ExternalReferenceError,
  InvalidArgumentsError,
  InvalidDocumentError,
  OpenApiError,
  OpenApiErrorCode,
  OperationNotFoundError,
} from './errors.js';
export { toOpenAiTool } from './openai-tool.js';
export type { OpenAiTool } from './openai-tool.js';
