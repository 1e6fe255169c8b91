// Conversion options and their defaults. Limits keep the output usable by a model and the conversion
// bounded in time on any document; each limit that bites is reported as a note.

export const UnionMode = {
  /** `oneOf`/`anyOf` become `anyOf` (OpenAI, JSON Schema). */
  ANY_OF: 'anyOf',
  /** Union branches are merged into one schema (targets without `anyOf`). */
  MERGE: 'merge',
} as const;
export type UnionMode = (typeof UnionMode)[keyof typeof UnionMode];

export const BodyMode = {
  /** An object body's properties become top-level arguments beside the parameters. */
  FLATTEN: 'flatten',
  /** The body is always one `body` argument. */
  NEST: 'nest',
} as const;
export type BodyMode = (typeof BodyMode)[keyof typeof BodyMode];

export const ExampleMode = {
  NONE: 'none',
  /** Keep examples that are strings, numbers or booleans (cheap, and useful to a model). */
  PRIMITIVE: 'primitive',
  ALL: 'all',
} as const;
export type ExampleMode = (typeof ExampleMode)[keyof typeof ExampleMode];

/** How schemas that recur are emitted. */
export const RefMode = {
  /**
   * Recursive types stay exact through `$ref`s into the function's root `$defs`, and a large schema used
   * several times in one function is emitted once there.
   */
  DEFS: 'defs',
  /** Everything inlined, no `$ref` at all: recursion is cut after `recursionDepth` expansions. */
  INLINE: 'inline',
} as const;
export type RefMode = (typeof RefMode)[keyof typeof RefMode];

export interface ConversionOptions {
  /** OpenAI structured-outputs variant: closed objects, every property required (optional ones nullable). */
  readonly strict?: boolean;
  readonly unions?: UnionMode;
  readonly bodyMode?: BodyMode;
  readonly examples?: ExampleMode;
  /** Longest description kept, in characters, ellipsis included. */
  readonly maxDescriptionLength?: number;
  /** Enums longer than this become a free value whose description lists the first values. */
  readonly maxEnumValues?: number;
  /** Deepest nesting of objects/arrays below the arguments object. */
  readonly maxDepth?: number;
  /** `$defs` (default) or everything inlined, for targets that take no `$ref`. */
  readonly refs?: RefMode;
  /** `refs: inline` only: how many times a recursive schema is expanded inside itself before being cut. */
  readonly recursionDepth?: number;
  /** `refs: defs` only: a schema used several times is shared once its JSON is at least this long. */
  readonly minSharedSchemaLength?: number;
  /** Most schema nodes emitted for one operation; beyond it sub-schemas become described stubs. */
  readonly maxSchemaNodes?: number;
  /**
   * Size budget of one function's JSON (name, description, parameters), in bytes. Past it, descriptions
   * and examples are shortened, the deepest first; no parameter is ever dropped. `Infinity` turns it off.
   */
  readonly maxFunctionBytes?: number;
}

export type ResolvedOptions = Required<ConversionOptions>;

export const DEFAULT_OPTIONS: ResolvedOptions = {
  strict: false,
  unions: UnionMode.ANY_OF,
  bodyMode: BodyMode.FLATTEN,
  examples: ExampleMode.PRIMITIVE,
  maxDescriptionLength: 1024,
  maxEnumValues: 256,
  maxDepth: 10,
  refs: RefMode.DEFS,
  recursionDepth: 1,
  minSharedSchemaLength: 300,
  maxSchemaNodes: 4000,
  maxFunctionBytes: 32 * 1024,
};

// OpenAI's structured outputs accept at most 10 levels of nesting.
const STRICT_MAX_DEPTH = 10;

export function resolveOptions(options: ConversionOptions = {}): ResolvedOptions {
  const merged = { ...DEFAULT_OPTIONS, ...stripUndefined(options) };
  const positive = (value: number, fallback: number): number =>
    Number.isFinite(value) && value >= 1 ? Math.floor(value) : fallback;
  return {
    ...merged,
    maxDescriptionLength: positive(merged.maxDescriptionLength, DEFAULT_OPTIONS.maxDescriptionLength),
    maxEnumValues: positive(merged.maxEnumValues, DEFAULT_OPTIONS.maxEnumValues),
    maxDepth: Math.min(
      positive(merged.maxDepth, DEFAULT_OPTIONS.maxDepth),
      merged.strict ? STRICT_MAX_DEPTH : Infinity,
    ),
    recursionDepth: positive(merged.recursionDepth, DEFAULT_OPTIONS.recursionDepth),
    minSharedSchemaLength: positive(merged.minSharedSchemaLength, DEFAULT_OPTIONS.minSharedSchemaLength),
    maxSchemaNodes: positive(merged.maxSchemaNodes, DEFAULT_OPTIONS.maxSchemaNodes),
    maxFunctionBytes:
      merged.maxFunctionBytes === Infinity
        ? Infinity
        : positive(merged.maxFunctionBytes, DEFAULT_OPTIONS.maxFunctionBytes),
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
