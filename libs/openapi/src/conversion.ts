// The result of converting one operation: the function a model sees, plus everything needed to turn the
// model's arguments back into an HTTP request. Plain JSON data, so it can be stored and sent as is.

import type { FunctionParameters } from './json-schema.js';
import type { ConversionNote } from './notes.js';

export const ParameterLocation = {
  PATH: 'path',
  QUERY: 'query',
  HEADER: 'header',
  COOKIE: 'cookie',
  BODY: 'body',
} as const;
export type ParameterLocation = (typeof ParameterLocation)[keyof typeof ParameterLocation];

export const BodyKind = {
  JSON: 'json',
  FORM: 'form',
  MULTIPART: 'multipart',
  TEXT: 'text',
  BINARY: 'binary',
} as const;
export type BodyKind = (typeof BodyKind)[keyof typeof BodyKind];

/** Where one argument of the function goes in the request. */
export interface ArgumentBinding {
  /** The argument's name in `parameters.properties`. */
  readonly property: string;
  readonly in: ParameterLocation;
  /** The name in its location; absent when the argument is the whole request body. */
  readonly name?: string;
  readonly required: boolean;
  /** Serialisation style (`simple`, `form`, `deepObject`, ...) as declared or defaulted by OpenAPI. */
  readonly style?: string;
  readonly explode?: boolean;
  readonly allowReserved?: boolean;
  /** Parameters given with `content` are serialised in this media type; multipart parts carry it. */
  readonly contentType?: string;
  /** A multipart file part: the argument is base64 text (or a `data:` URL), or a list of them. */
  readonly file?: boolean;
}

export interface BodyBinding {
  readonly contentType: string;
  readonly kind: BodyKind;
  readonly required: boolean;
  /** True when the body is one `body`-like argument; false when its properties are arguments. */
  readonly whole: boolean;
}

/** Which arguments (strict mode) were made nullable only to be optional: `null` there means "absent". */
export interface NullAsAbsent {
  absentIfNull?: true;
  properties?: Record<string, NullAsAbsent>;
  items?: NullAsAbsent;
  /** The value is a `$ref` into `$defs`: its tree is the root's `defs[def]`. */
  def?: string;
  /** On the root only: the trees of the `$defs` schemas, by name. */
  defs?: Record<string, NullAsAbsent>;
}

export interface OperationConversion {
  /** Legal function name (`^[a-zA-Z0-9_-]{1,64}$`), unique within its document. */
  readonly name: string;
  readonly description: string;
  readonly parameters: FunctionParameters;
  readonly strict: boolean;
  /** Upper-case HTTP method, when known. */
  readonly method: string | undefined;
  /**
   * The path key as the document writes it: a template with `{name}` placeholders, possibly with a
   * `#fragment` or a fixed `?query` (see path-key.ts; `buildRequestParts` handles both). Absent when unknown.
   */
  readonly path: string | undefined;
  readonly operationId: string | undefined;
  /** Server URLs for this operation (operation, path item or document level), variables defaulted. */
  readonly servers: string[];
  readonly arguments: ArgumentBinding[];
  readonly body: BodyBinding | undefined;
  /** Alternatives of security requirements (scheme name → scopes); `[]` means no auth. */
  readonly security: Array<Record<string, string[]>> | undefined;
  readonly nullAsAbsent: NullAsAbsent | undefined;
  readonly notes: ConversionNote[];
}
