// Turns OpenAPI 3.0/3.1 Schema Objects into self-contained JSON Schema for a request: `$ref`s are inlined,
// except a recursive one, which becomes a `$ref` into the function's own `$defs` (with `refs: inline`, it is
// expanded a bounded number of times, then cut with a described stub); `$ref: "#"` and `$recursiveRef`
// name the schema resource they sit in, the innermost (or, anchored, outermost) one being expanded; `allOf` merged,
// unions kept as `anyOf`, `nullable` made a type, readOnly properties dropped. Each operation converts in
// bounded time and size: past `maxDepth` or `maxSchemaNodes` sub-schemas become described stubs.
//
// Converted `$ref` targets are memoised per document. A memoised result is reused only where converting
// afresh would give the very same schema (no recursion cut that depended on the schemas around it, no
// limit hit, no ref of the current path inside it, enough depth and size left), so results never depend
// on which operation was converted first.

import { asString, isJsonObject, type JsonObject } from './json.js';
import { parseLocalPointer } from './json-pointer.js';
import { makeNullable, type JsonSchema } from './json-schema.js';
import { convertKeywords, stubFor } from './schema-keywords.js';
import { NoteCode, type ConversionNote, type NoteCollector } from './notes.js';
import { RefMode, type ResolvedOptions } from './options.js';
import { RecursiveRefs } from './recursive-refs.js';
import type { RefResolver } from './ref-resolver.js';

/** State of converting one operation: its notes and how much of the size budget is spent. */
export interface NormaliseSession {
  readonly notes: NoteCollector;
  /** Where inline schemas of this operation live in the document, for notes. */
  readonly source: string | undefined;
  nodes: number;
  /** `$defs` of the function being built: name → schema (recursive types), filled as refs recur. */
  readonly defs: Map<string, JsonSchema>;
}

interface Frame {
  readonly key: string;
  readonly index: number;
  readonly startDepth: number;
  /** Smallest stack index of a ref whose presence caused a recursion cut below this frame. */
  cutDependsOn: number;
  truncated: boolean;
  deepest: number;
  readonly refs: Set<string>;
  /** True when the schema declares `$recursiveAnchor: true` (a `$recursiveRef` may land here). */
  readonly anchored: boolean;
  /** Keys whose `$defs` entries the converted subtree points at. */
  readonly defKeys: Set<string>;
}

interface MemoEntry {
  readonly schema: JsonSchema;
  readonly nodes: number;
  readonly height: number;
  readonly refs: ReadonlySet<string>;
  readonly defKeys: ReadonlySet<string>;
  readonly notes: readonly ConversionNote[];
}

// Most nested conversions in progress at once (refs, allOf, unions, properties), whatever the input.
const MAX_NESTING = 200;

// Keywords that may sit beside a `$ref` without changing what it means (3.0 ignores siblings; these
// are the ones documents use anyway). Any other sibling makes the pair an implicit `allOf`.
const REF_ANNOTATIONS = new Set([
  '$ref',
  'description',
  'summary',
  'title',
  'nullable',
  'readOnly',
  'writeOnly',
  'deprecated',
  'default',
  'example',
  'examples',
]);

// The annotations beside a `$ref` that apply to the schema it names (converted like its own keywords).
const REF_OVERLAYS = new Set(['description', 'readOnly', 'writeOnly', 'deprecated', 'default', 'example']);

export class SchemaNormaliser {
  private readonly memo = new Map<string, MemoEntry>();
  // `$defs` names are per document, so memoised schemas pointing at them stay valid in every operation.
  private readonly defNames = new Map<string, string>();
  private readonly takenDefNames = new Set<string>();
  /** Converted schemas of recursive refs (not cut by a limit), by key, for reuse in other operations. */
  private readonly defContent = new Map<string, { schema: JsonSchema; defKeys: ReadonlySet<string> }>();
  private readonly recursion: RecursiveRefs;
  /** The `$ref` target each converted schema stands for (by identity), to name it if it is shared. */
  private readonly origins = new WeakMap<JsonSchema, string>();
  private readonly displayNames = new Map<string, string>();
  /** Recursive refs met in this `normalise` call whose `$defs` entries are still to be converted. */
  private pendingDefs: string[] = [];
  private readonly stack: Frame[] = [];
  private nesting = 0;
  private session: NormaliseSession | undefined;

  constructor(
    private readonly resolver: RefResolver,
    readonly options: ResolvedOptions,
  ) {
    this.recursion = new RecursiveRefs(resolver);
  }

  /**
   * Converts `schema` at nesting `depth` (1 = an argument of the function). Not re-entrant across
   * sessions: one operation is converted at a time.
   */
  normalise(schema: unknown, session: NormaliseSession, depth: number): JsonSchema {
    this.session = session;
    try {
      const converted = this.node(schema, depth);
      this.convertPendingDefs();
      return this.inlineTop(converted);
    } finally {
      this.session = undefined;
      this.stack.length = 0;
      this.nesting = 0;
      this.pendingDefs = [];
    }
  }

  /**
   * An argument (or a body to flatten) that is itself a recursive type is given as its `$defs` schema, not
   * as a bare `$ref`: the entry stays for the references inside it.
   */
  private inlineTop(converted: JsonSchema): JsonSchema {
    if (converted.$ref === undefined) return converted;
    const { $ref, ...annotations } = converted;
    const target = this.current.defs.get($ref.slice('#/$defs/'.length));
    return target === undefined ? converted : { ...target, ...annotations };
  }

  /**
   * Converts the `$defs` entries the last conversion pointed at (and those they point at), each from an
   * empty stack, so an entry is the same wherever its type was met.
   */
  private convertPendingDefs(): void {
    for (let key = this.pendingDefs.shift(); key !== undefined; key = this.pendingDefs.shift()) {
      const name = this.defName(key);
      const resolution = this.resolver.resolve(key);
      if (!resolution.ok) continue;
      const frame = this.newFrame(key, resolution.value, 1);
      this.stack.length = 0;
      this.nesting = 0;
      this.stack.push(frame);
      let converted: JsonSchema;
      try {
        converted = this.node(resolution.value, 1);
      } finally {
        this.stack.pop();
      }
      this.current.defs.set(name, converted);
      if (!frame.truncated) this.defContent.set(key, { schema: converted, defKeys: frame.defKeys });
    }
  }

  /** Makes sure the `$defs` entry of recursive `key` is (or will be) in the function being built. */
  private requireDef(key: string): void {
    const name = this.defName(key);
    const defs = this.current.defs;
    if (defs.has(name) || this.pendingDefs.includes(key)) return;
    const known = this.defContent.get(key);
    if (known === undefined) {
      // A placeholder keeps `$defs` in the order types were met; the entry is converted after the argument.
      defs.set(name, {});
      this.pendingDefs.push(key);
      return;
    }
    defs.set(name, known.schema);
    for (const defKey of known.defKeys) this.requireDef(defKey);
  }

  private newFrame(key: string, value: unknown, depth: number): Frame {
    return {
      key,
      index: this.stack.length,
      startDepth: depth,
      cutDependsOn: Infinity,
      truncated: false,
      deepest: depth,
      refs: new Set([key]),
      anchored: isJsonObject(value) && value.$recursiveAnchor === true,
      defKeys: new Set(),
    };
  }

  private get current(): NormaliseSession {
    if (!this.session) throw new Error('SchemaNormaliser used outside normalise()');
    return this.session;
  }

  /** Records a note at the innermost `$ref` being expanded (or the operation's own location). */
  note(code: NoteCode, message: string): void {
    this.current.notes.add(code, message, this.stack.at(-1)?.key ?? this.current.source);
  }

  /** Called by keyword conversion when it descends, so frames know how deep their subtree goes. */
  private touch(depth: number): void {
    const top = this.stack.at(-1);
    if (top && depth > top.deepest) top.deepest = depth;
  }

  private truncate(): void {
    const top = this.stack.at(-1);
    if (top) top.truncated = true;
  }

  node(schema: unknown, depth: number): JsonSchema {
    this.touch(depth);
    const limit = this.limitReached(depth);
    if (limit) {
      this.truncate();
      this.note(limit.code, limit.note);
      return stubFor(this.targetOf(schema), limit.stub);
    }
    if (schema === true || (isJsonObject(schema) && isEmpty(schema))) return {};
    if (!isJsonObject(schema)) {
      const shown = Array.isArray(schema) ? 'a list' : JSON.stringify(schema)?.slice(0, 80);
      this.note(NoteCode.INVALID_INPUT, `a schema was ${shown}, not an object; any value is accepted`);
      return {};
    }
    this.nesting += 1;
    try {
      if (schema.$ref === '#' || typeof schema.$recursiveRef === 'string') {
        return this.selfReference(schema, depth);
      }
      if (typeof schema.$ref === 'string') return this.reference(schema, depth);
      return convertKeywords(schema, depth, this);
    } finally {
      this.nesting -= 1;
    }
  }

  /** Which bound (depth, size, call nesting) stops expanding here, if any; counts the node otherwise. */
  private limitReached(depth: number): { code: NoteCode; note: string; stub: string } | undefined {
    const { maxDepth, maxSchemaNodes } = this.options;
    if (depth > maxDepth) {
      return {
        code: NoteCode.DEPTH_LIMIT,
        note: `nesting deeper than ${maxDepth} levels was not expanded`,
        stub: `Nested deeper than ${maxDepth} levels; not expanded.`,
      };
    }
    // allOf/anyOf chains do not add levels; this catches them (and cyclic YAML aliases) too.
    if (this.nesting >= MAX_NESTING) {
      return {
        code: NoteCode.DEPTH_LIMIT,
        note: `schemas nested more than ${MAX_NESTING} times were not expanded`,
        stub: 'Nested too deeply; not expanded.',
      };
    }
    const session = this.current;
    session.nodes += 1;
    if (session.nodes > maxSchemaNodes) {
      return {
        code: NoteCode.SIZE_LIMIT,
        note: `the schema reached ${maxSchemaNodes} nodes; the rest was not expanded`,
        stub: 'Not expanded: the schema is too large.',
      };
    }
    return undefined;
  }

  private reference(schema: JsonObject, depth: number, recursive = false): JsonSchema {
    if (hasRefSiblings(schema)) {
      // OpenAPI 3.1 lets a `$ref` carry real keywords: read it as `allOf: [ref, rest]`.
      const { $ref, ...rest } = schema;
      return convertKeywords(
        { ...rest, allOf: [{ $ref }, ...(Array.isArray(rest.allOf) ? rest.allOf : [])] },
        depth,
        this,
      );
    }
    const ref = schema.$ref as string;
    const resolution = this.resolver.resolve(ref);
    if (!resolution.ok) {
      this.note(NoteCode.UNRESOLVED_REF, resolution.reason);
      return this.annotate(
        { description: `Unresolved reference ${ref}; any value is accepted.` },
        schema,
        depth,
      );
    }
    const key = resolution.pointer;
    if (this.options.refs === RefMode.DEFS && (recursive || this.recursion.isRecursive(key))) {
      this.stack.at(-1)?.defKeys.add(key);
      this.requireDef(key);
      return this.annotate({ $ref: this.defRef(key) }, schema, depth);
    }
    const occurrences = this.stack.filter((frame) => frame.key === key);
    if (occurrences.length >= this.options.recursionDepth) {
      const top = this.stack.at(-1);
      if (top) top.cutDependsOn = Math.min(top.cutDependsOn, occurrences[0]!.index);
      this.note(
        NoteCode.RECURSION_CUT,
        `recursive schema ${key} was cut after ${this.options.recursionDepth} expansion(s)`,
      );
      const name = displayName(key);
      return this.annotate(
        stubFor(resolution.value, `Recursive ${name}; not expanded further.`),
        schema,
        depth,
      );
    }
    const reused = this.reuse(key, depth);
    if (reused) return this.annotate(reused, schema, depth);

    const frame = this.newFrame(key, resolution.value, depth);
    const notesMark = this.current.notes.mark();
    const nodesBefore = this.current.nodes;
    this.stack.push(frame);
    let converted: JsonSchema;
    try {
      converted = this.node(resolution.value, depth);
    } finally {
      this.stack.pop();
    }
    this.absorb(frame);
    if (!frame.truncated && frame.cutDependsOn >= frame.index) {
      this.memo.set(key, {
        schema: converted,
        nodes: this.current.nodes - nodesBefore,
        height: frame.deepest - depth,
        refs: frame.refs,
        defKeys: frame.defKeys,
        notes: this.current.notes.since(notesMark),
      });
    }
    // The innermost ref that gave this very object names it (an `allOf` of one ref returns its branch's
    // object): fixed once, so the name never depends on which operation met it first.
    if (!this.origins.has(converted)) this.origins.set(converted, key);
    return this.annotate(converted, schema, depth);
  }

  private reuse(key: string, depth: number): JsonSchema | undefined {
    const entry = this.memo.get(key);
    if (!entry) return undefined;
    if (depth + entry.height > this.options.maxDepth) return undefined;
    if (this.current.nodes + entry.nodes > this.options.maxSchemaNodes) return undefined;
    if (this.stack.some((frame) => entry.refs.has(frame.key))) return undefined;
    // The `$defs` entries the memoised schema points at come with it.
    for (const defKey of entry.defKeys) this.requireDef(defKey);
    this.current.nodes += entry.nodes;
    for (const note of entry.notes) this.current.notes.push(note);
    const top = this.stack.at(-1);
    if (top) {
      top.deepest = Math.max(top.deepest, depth + entry.height);
      for (const ref of entry.refs) top.refs.add(ref);
      for (const defKey of entry.defKeys) top.defKeys.add(defKey);
    }
    return entry.schema;
  }

  /** Hands what a finished frame learnt to the frame around it. */
  private absorb(frame: Frame): void {
    const parent = this.stack.at(-1);
    if (!parent) return;
    parent.cutDependsOn = Math.min(parent.cutDependsOn, frame.cutDependsOn);
    parent.truncated ||= frame.truncated;
    parent.deepest = Math.max(parent.deepest, frame.deepest);
    for (const ref of frame.refs) parent.refs.add(ref);
    for (const defKey of frame.defKeys) parent.defKeys.add(defKey);
  }

  /**
   * `$ref: "#"` and `$recursiveRef: "#"`: the root of the schema resource they sit in, which is the ref
   * being expanded innermost. A `$recursiveRef` whose resource is `$recursiveAnchor`ed goes to the outermost
   * anchored one being expanded (JSON Schema 2019-09's dynamic scope).
   */
  private selfReference(schema: JsonObject, depth: number): JsonSchema {
    const { $recursiveRef, ...rest } = schema;
    const written = typeof $recursiveRef === 'string' ? $recursiveRef : '#';
    if (written !== '#') return this.node({ ...rest, $ref: written }, depth);
    let target = this.stack.at(-1);
    if (typeof $recursiveRef === 'string' && target?.anchored) {
      target = this.stack.find((frame) => frame.anchored) ?? target;
    }
    const keyword = typeof $recursiveRef === 'string' ? '$recursiveRef' : '$ref';
    if (target === undefined) {
      this.note(
        NoteCode.UNRESOLVED_REF,
        `${keyword} "#" names the schema it sits in, which is inline in the operation and has no name to point at; any value is accepted there`,
      );
      return this.annotate(
        { description: 'Recursive reference to the enclosing schema; any value is accepted.' },
        rest,
        depth,
      );
    }
    return this.reference({ ...rest, $ref: target.key }, depth, true);
  }

  /**
   * The component a converted schema (or its finalised copy) stands for, by its display name
   * (`#/components/schemas/Pet` → `Pet`), when it is one unchanged.
   */
  componentName(schema: JsonSchema): string | undefined {
    const key = this.origins.get(schema);
    if (key === undefined) return undefined;
    let name = this.displayNames.get(key);
    if (name === undefined) this.displayNames.set(key, (name = displayName(key)));
    return name;
  }

  /** Lets a copy of a converted schema (finalised, ...) keep its origin. */
  carryOrigin(from: JsonSchema, to: JsonSchema): void {
    const key = this.origins.get(from);
    if (key !== undefined && !this.origins.has(to)) this.origins.set(to, key);
  }

  private defName(key: string): string {
    const known = this.defNames.get(key);
    if (known !== undefined) return known;
    const base = displayName(key).replace(/[^A-Za-z0-9_.-]+/g, '_') || 'Schema';
    let name = base;
    for (let n = 2; this.takenDefNames.has(name); n++) name = `${base}_${n}`;
    this.takenDefNames.add(name);
    this.defNames.set(key, name);
    return name;
  }

  private defRef(key: string): string {
    return `#/$defs/${this.defName(key)}`;
  }

  /** Applies the annotations written beside a `$ref` (description, nullable, readOnly, ...). */
  private annotate(target: JsonSchema, refHolder: JsonObject, depth: number): JsonSchema {
    const annotations: JsonObject = {};
    let annotated = target;
    // Most holders are a bare `{$ref}`: one pass over their keys says so without six lookups.
    let annotatedKeys = false;
    for (const key in refHolder) if (REF_OVERLAYS.has(key)) annotatedKeys = true;
    if (!annotatedKeys) return refHolder.nullable === true ? makeNullable(annotated) : annotated;
    for (const key of REF_OVERLAYS) {
      if (refHolder[key] !== undefined) annotations[key] = refHolder[key];
    }
    if (Object.keys(annotations).length > 0) {
      const overlay = convertKeywords(annotations, depth, this);
      annotated = { ...target, ...overlay };
    }
    return refHolder.nullable === true ? makeNullable(annotated) : annotated;
  }

  resolveMap(value: unknown): unknown {
    if (!isJsonObject(value) || typeof value.$ref !== 'string' || Object.keys(value).length !== 1)
      return value;
    const deref = this.resolver.deref(value);
    if (deref.ok) return deref.value;
    this.note(NoteCode.UNRESOLVED_REF, deref.reason);
    return {};
  }

  /** The schema a possibly-`$ref` node stands for, for describing stubs. */
  private targetOf(schema: unknown): unknown {
    const ref = isJsonObject(schema) ? asString(schema.$ref) : undefined;
    if (ref === undefined) return schema;
    const resolution = this.resolver.resolve(ref);
    return resolution.ok ? resolution.value : schema;
  }
}

function isEmpty(object: JsonObject): boolean {
  for (const key in object) if (Object.hasOwn(object, key)) return false;
  return true;
}

/** True when a `$ref` holder carries a keyword beyond annotations and `x-` extensions. */
function hasRefSiblings(schema: JsonObject): boolean {
  for (const key in schema) {
    if (!REF_ANNOTATIONS.has(key) && !key.startsWith('x-')) return true;
  }
  return false;
}

/** `#/components/schemas/Node` → `Node`; a bundled file `#/x-…/models~1pet.yml` → `pet.yml`. */
function displayName(pointer: string): string {
  const last = parseLocalPointer(pointer)?.at(-1) ?? pointer;
  return last.split('/').at(-1) || pointer;
}
