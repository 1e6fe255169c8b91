/**
 * A bundled document as `@samchon/openapi` can read it, for the converter bench's like-for-like rows.
 * `loadDocument` bundles a multi-file document's files under `#/x-agentmesh-external/…` and points refs
 * there; samchon follows only `#/components/…` refs and turns the rest into empty schemas, so it did far
 * less work than ours on such a document (DigitalOcean: 236 of 658 functions without parameters). Here
 * every bundled schema a ref points at becomes a `#/components/schemas/…` entry, as a single-file
 * document would have it, and a bundled parameter, response or request body is put in place of its ref.
 * This is done before timing, so it is work samchon is spared: the comparison leans its way.
 */
import { BUNDLE_KEY } from '@agentmesh/openapi';

type Json = unknown;
const EXTERNAL_PREFIX = `#/${BUNDLE_KEY}/`;

export function asSingleFileDocument(document: Record<string, unknown>): Record<string, unknown> {
  if (!(BUNDLE_KEY in document)) return document;
  const inlined = new Map<string, Json>();
  /** Bundled schemas by pointer, as the components schema each became. */
  const hoisted = new Map<string, string>();
  const existing = ((document['components'] as Record<string, Json> | undefined)?.['schemas'] ??
    {}) as Record<string, Json>;
  const schemas: Record<string, Json> = {};

  const target = (pointer: string): Json => {
    let node: Json = document;
    for (const raw of pointer.slice(2).split('/')) {
      const token = decodeURIComponent(raw).replaceAll('~1', '/').replaceAll('~0', '~');
      if (node === null || typeof node !== 'object') return {};
      node = (node as Record<string, Json>)[token];
    }
    return node ?? {};
  };
  const nameFor = (pointer: string): string => {
    const base = pointer.slice(EXTERNAL_PREFIX.length).replace(/[^A-Za-z0-9_]+/g, '_');
    let name = base;
    for (let n = 2; name in existing || name in schemas || [...hoisted.values()].includes(name); n++) {
      name = `${base}_${n}`;
    }
    return name;
  };

  // In a schema (below a `schema` or `schemas` key, or in a schema a ref led to), a bundled ref becomes
  // a components schema, as a single-file document would have it; elsewhere (a parameter, a response, a
  // request body) it is replaced by its target.
  const visit = (node: Json, inSchema: boolean): Json => {
    if (Array.isArray(node)) return node.map((item) => visit(item, inSchema));
    if (node === null || typeof node !== 'object') return node;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith(EXTERNAL_PREFIX)) {
      if (inSchema) {
        let name = hoisted.get(ref);
        if (name === undefined) {
          hoisted.set(ref, (name = nameFor(ref)));
          schemas[name] = visit(target(ref), true);
        }
        return { $ref: `#/components/schemas/${name}` };
      }
      if (!inlined.has(ref)) inlined.set(ref, visit(target(ref), false));
      return inlined.get(ref);
    }
    const copy: Record<string, Json> = {};
    for (const [key, value] of Object.entries(node)) {
      copy[key] = visit(value, inSchema || key === 'schema' || key === 'schemas');
    }
    return copy;
  };

  const { [BUNDLE_KEY]: _bundled, ...rest } = document;
  const result = visit(rest, false) as Record<string, Json>;
  if (hoisted.size > 0) {
    const components = (result['components'] ?? {}) as Record<string, Json>;
    result['components'] = {
      ...components,
      schemas: { ...((components['schemas'] ?? {}) as Record<string, Json>), ...schemas },
    };
  }
  return result;
}
