// Conversion notes: everything the converter changed, cut or could not express is reported here instead
// of being thrown or silently dropped, so a caller (and the corpus summary) can see what the model gets.

export const NoteCode = {
  /** A `$ref` could not be resolved (missing target, external file not bundled, `#anchor` form). */
  UNRESOLVED_REF: 'unresolved_ref',
  /**
   * `refs: inline` only: a recursive schema was expanded a bounded number of times, then replaced by a
   * described stub (with `refs: defs` recursion stays exact through `$defs`).
   */
  RECURSION_CUT: 'recursion_cut',
  /** Nesting deeper than `maxDepth` was replaced by a described stub. */
  DEPTH_LIMIT: 'depth_limit',
  /** The operation's schema reached `maxSchemaNodes`; the rest was replaced by described stubs. */
  SIZE_LIMIT: 'size_limit',
  /**
   * The function's JSON was over `maxFunctionBytes`: descriptions and examples were shortened, the deepest
   * first (no parameter is dropped). The message says how far it went and the sizes before and after.
   */
  SIZE_BUDGET: 'size_budget',
  /** `allOf` branches disagree (types, enums, consts, two unions); the first one was kept. */
  ALLOF_CONFLICT: 'allof_conflict',
  /** `oneOf`/`anyOf` could not be kept as `anyOf` and was merged or simplified. */
  UNION_SIMPLIFIED: 'union_simplified',
  /** Two arguments wanted the same property name; one was renamed. */
  NAME_COLLISION: 'name_collision',
  /** The function name had to be sanitised, truncated or made unique. */
  NAME_ADJUSTED: 'name_adjusted',
  /** An enum longer than `maxEnumValues` was turned into a described free value. */
  ENUM_BOUNDED: 'enum_bounded',
  /** A description longer than `maxDescriptionLength` was cut with an ellipsis. */
  DESCRIPTION_TRUNCATED: 'description_truncated',
  /** The request body offered several media types; this one was chosen. */
  CONTENT_TYPE_CHOSEN: 'content_type_chosen',
  /** Binary content (files, octet-stream bodies) is asked for as base64 text. */
  BINARY_AS_BASE64: 'binary_as_base64',
  /** A keyword with no equivalent in the target was dropped. */
  KEYWORD_DROPPED: 'keyword_dropped',
  /** Part of the input was not a valid schema/parameter and was ignored or replaced. */
  INVALID_INPUT: 'invalid_input',
  /** A parameter was left out of the function (e.g. `Content-Type` header, unknown location). */
  PARAMETER_IGNORED: 'parameter_ignored',
  /** Strict mode had to weaken or reshape part of the schema. */
  STRICT_ADJUSTED: 'strict_adjusted',
} as const;
export type NoteCode = (typeof NoteCode)[keyof typeof NoteCode];

export interface ConversionNote {
  readonly code: NoteCode;
  readonly message: string;
  /** Where in the source document the note comes from (a JSON Pointer), when known. */
  readonly source?: string;
}

export class NoteCollector {
  private readonly notes: ConversionNote[] = [];
  private readonly seen = new Set<string>();
  // Every note pushed, duplicates included, so a memoised subtree can replay its notes elsewhere.
  private readonly log: ConversionNote[] = [];

  add(code: NoteCode, message: string, source?: string): void {
    this.push(source === undefined ? { code, message } : { code, message, source });
  }

  push(note: ConversionNote): void {
    this.log.push(note);
    const key = `${note.code}\u0000${note.message}\u0000${note.source ?? ''}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.notes.push(note);
  }

  /** A position to later ask for every note added after it. */
  mark(): number {
    return this.log.length;
  }

  since(mark: number): ConversionNote[] {
    return this.log.slice(mark);
  }

  list(): ConversionNote[] {
    return [...this.notes];
  }
}
