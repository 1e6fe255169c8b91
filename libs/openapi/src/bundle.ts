// Bundles a multi-file OpenAPI document into one: every relative (external) `$ref` is resolved through
// a caller-supplied loader, the referenced file is copied once under `x-agentmesh-external/<path>`,
// and the `$ref` rewritten to a local pointer into that copy. Only fragments actually referenced are
// walked, in the context they are referenced from (an Example Object's `value` is data, not refs).
// Pure: reading files is the loader's business (see load-document.ts for the Node one).

import { InvalidDocumentError } from './errors.js';
import { isJsonObject, type JsonObject } from './json.js';
import { escapePointerToken, parseLocalPointer, pointerFromTokens, valueAtPointer } from './json-pointer.js';
import { NoteCode, type ConversionNote } from './notes.js';
import { walkReferences, type WalkContext } from './ref-walker.js';

/** Where bundled files live in the document. */
export const BUNDLE_KEY = 'x-agentmesh-external';

/** Returns the parsed content of the document at `uri` (absolute, e.g. `file:///…/models/pet.yml`). */
export type DocumentLoader = (uri: string) => Promise<unknown> | unknown;

export interface BundleOptions {
  /** Absolute URI of the entry document; relative refs are resolved against it. */
  readonly baseUri: string;
  readonly load: DocumentLoader;
  /** Most files loaded before giving up on further references (each is reported). */
  readonly maxFiles?: number;
}

export interface BundleResult {
  readonly document: JsonObject;
  /** Bundled files, as keys under `x-agentmesh-external` (paths relative to the entry's folder). */
  readonly files: string[];
  /** External references that could not be bundled (they stay unresolved, and convert with a note). */
  readonly notes: ConversionNote[];
}

interface LoadedFile {
  readonly key: string;
  readonly content: unknown;
}

export async function bundleDocument(root: unknown, options: BundleOptions): Promise<BundleResult> {
  if (!isJsonObject(root))
    throw new InvalidDocumentError('the document is not an object', { type: typeName(root) });
  const entryUri = withoutFragment(options.baseUri);
  const entryFolder = new URL('.', entryUri).href;
  const maxFiles = options.maxFiles ?? 10_000;
  const document = structuredClone(root);
  const external: JsonObject = {};
  const files = new Map<string, LoadedFile | { error: string }>();
  const notes: ConversionNote[] = [];
  const rewritten = new WeakSet<object>();
  const queued = new WeakSet<object>();
  const queue: Array<{ node: unknown; fileUri: string; context: WalkContext }> = [
    { node: document, fileUri: entryUri, context: 'node' },
  ];

  const load = async (uri: string): Promise<LoadedFile | { error: string }> => {
    const known = files.get(uri);
    if (known) return known;
    let result: LoadedFile | { error: string };
    if (files.size >= maxFiles) {
      result = { error: `more than ${maxFiles} files` };
    } else {
      try {
        const key = uri.startsWith(entryFolder) ? decodeURIComponent(uri.slice(entryFolder.length)) : uri;
        const content = structuredClone(await options.load(uri));
        external[key] = content;
        result = { key, content };
      } catch (error) {
        result = { error: error instanceof Error ? error.message : String(error) };
      }
    }
    files.set(uri, result);
    return result;
  };

  while (queue.length > 0) {
    const { node, fileUri, context } = queue.shift()!;
    const holders: Array<[JsonObject, WalkContext]> = [];
    walkReferences(node, (holder, holderContext) => holders.push([holder, holderContext]), context);
    for (const [holder, holderContext] of holders) {
      if (rewritten.has(holder)) continue;
      rewritten.add(holder);
      const ref = holder.$ref as string;
      const hash = ref.indexOf('#');
      const target = hash === -1 ? ref : ref.slice(0, hash);
      const fragment = hash === -1 ? '' : ref.slice(hash);
      if (target === '' && fileUri === entryUri) continue; // local to the entry: already right
      let targetUri: string;
      try {
        targetUri = target === '' ? fileUri : withoutFragment(new URL(target, fileUri).href);
      } catch {
        notes.push({ code: NoteCode.UNRESOLVED_REF, message: `"${ref}" is not a valid reference` });
        continue;
      }
      const tokens = parseLocalPointer(fragment || '#');
      if (!tokens) {
        notes.push({
          code: NoteCode.UNRESOLVED_REF,
          message: `"${ref}" has a fragment that is not a JSON Pointer`,
        });
        continue;
      }
      if (targetUri === entryUri) {
        holder.$ref = pointerFromTokens(tokens);
        continue;
      }
      const file = await load(targetUri);
      if ('error' in file) {
        notes.push({ code: NoteCode.UNRESOLVED_REF, message: `"${ref}" could not be loaded: ${file.error}` });
        continue;
      }
      holder.$ref = `#/${escapePointerToken(BUNDLE_KEY)}/${escapePointerToken(file.key)}${pointerFromTokens(tokens).slice(1)}`;
      const value = valueAtPointer(file.content, tokens);
      if (value === undefined) {
        notes.push({ code: NoteCode.UNRESOLVED_REF, message: `"${ref}" points at nothing in ${file.key}` });
        continue;
      }
      if (isJsonObject(value) || Array.isArray(value)) {
        if (queued.has(value)) continue;
        queued.add(value);
      }
      queue.push({ node: value, fileUri: targetUri, context: holderContext });
    }
  }
  if (Object.keys(external).length > 0) document[BUNDLE_KEY] = external;
  return { document, files: Object.keys(external), notes };
}

function withoutFragment(uri: string): string {
  const hash = uri.indexOf('#');
  return hash === -1 ? uri : uri.slice(0, hash);
}

function typeName(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}
