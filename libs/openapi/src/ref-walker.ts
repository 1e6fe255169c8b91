// Finds Reference Objects (`{"$ref": "..."}`) in the positions where OpenAPI and JSON Schema allow them,
// and only there: example values, defaults, enums, consts and `x-` extensions are data, so a `$ref` key
// inside them is left alone (GitHub's SCIM examples and DigitalOcean's examples contain such keys).

import { isJsonObject, type JsonObject } from './json.js';

// Keys whose value is a map from names to nodes: their keys are names, never keywords, so a property
// called `example` or `x-id` is still walked.
const NAMED_MAP_KEYS = new Set([
  'properties',
  'patternProperties',
  '$defs',
  'definitions',
  'dependentSchemas',
  'schemas',
  'responses',
  'parameters',
  'requestBodies',
  'headers',
  'securitySchemes',
  'links',
  'callbacks',
  'pathItems',
  'paths',
  'webhooks',
  'content',
  'encoding',
]);

// Keys whose value is data in every node that can hold them.
const DATA_KEYS = new Set(['example', 'default', 'enum', 'const']);

/** What a walked object is: an ordinary node, or an Example Object (whose `value` is data). */
export type WalkContext = 'node' | 'exampleObject';
type Context = WalkContext | 'namedMap' | 'exampleMap';

/**
 * Calls `visit` with every object holding a string `$ref` in a reference position below `root`, and
 * what the holder stands for (a `$ref` in an `examples` map names an Example Object). Shared and cyclic
 * object graphs (YAML anchors) are walked once.
 */
export function walkReferences(
  root: unknown,
  visit: (holder: JsonObject, context: WalkContext) => void,
  rootContext: WalkContext = 'node',
): void {
  const seen = new WeakSet<object>();
  const stack: Array<[unknown, Context]> = [[root, rootContext]];
  while (stack.length > 0) {
    const [node, context] = stack.pop()!;
    if (Array.isArray(node)) {
      if (seen.has(node)) continue;
      seen.add(node);
      for (const item of node) stack.push([item, 'node']);
      continue;
    }
    if (!isJsonObject(node) || seen.has(node)) continue;
    seen.add(node);
    if (context === 'namedMap' || context === 'exampleMap') {
      // A whole map given as a reference (DigitalOcean writes `properties: {$ref: attributes.yml#/x}`).
      if (typeof node.$ref === 'string') visit(node, 'node');
      const childContext = context === 'exampleMap' ? 'exampleObject' : 'node';
      for (const value of Object.values(node)) stack.push([value, childContext]);
      continue;
    }
    if (typeof node.$ref === 'string') visit(node, context);
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' || DATA_KEYS.has(key) || key.startsWith('x-')) continue;
      if (context === 'exampleObject' && key === 'value') continue;
      if (key === 'examples') {
        // Schema `examples` is an array of values (data); media-type `examples` maps names to Example Objects.
        if (isJsonObject(value)) stack.push([value, 'exampleMap']);
        continue;
      }
      stack.push([value, NAMED_MAP_KEYS.has(key) && isJsonObject(value) ? 'namedMap' : 'node']);
    }
  }
}

/** Every `$ref` string in reference positions below `root` (used by checks and tests). */
export function listReferences(root: unknown): string[] {
  const refs: string[] = [];
  walkReferences(root, (holder) => refs.push(holder.$ref as string));
  return refs;
}
