// Which `$ref` targets of a document are recursive: those on a cycle of references (a schema that reaches
// itself through its properties, items, unions, ...). A static property of the document, so converting a
// schema never depends on which operation met it first. Found with Tarjan's algorithm, without recursion,
// over references read lazily: only the part of the document reached from the refs asked about is walked.

import { isJsonObject } from './json.js';
import type { RefResolver } from './ref-resolver.js';

// Values that are data, not schemas: a `$ref` inside them names nothing.
const DATA_KEYS = new Set(['example', 'examples', 'default', 'enum', 'const']);

export class RecursiveRefs {
  private readonly edgesOf = new Map<string, string[]>();
  private readonly classified = new Set<string>();
  private readonly recursive = new Set<string>();

  constructor(private readonly resolver: RefResolver) {}

  /** True when `key` (a resolved pointer, `#/components/schemas/Node`) lies on a cycle of references. */
  isRecursive(key: string): boolean {
    if (!this.classified.has(key)) this.classify(key);
    return this.recursive.has(key);
  }

  private classify(start: string): void {
    const index = new Map<string, number>();
    const low = new Map<string, number>();
    const stack: string[] = [];
    const onStack = new Set<string>();
    const work: Array<{ key: string; edges: string[]; next: number }> = [];
    let counter = 0;
    const open = (key: string): void => {
      index.set(key, counter);
      low.set(key, counter);
      counter += 1;
      stack.push(key);
      onStack.add(key);
      work.push({ key, edges: this.edges(key), next: 0 });
    };
    open(start);
    while (work.length > 0) {
      const top = work.at(-1)!;
      if (top.next < top.edges.length) {
        const target = top.edges[top.next++]!;
        // Classified in an earlier run: its cycles were all found then, none can pass through here.
        if (this.classified.has(target)) continue;
        if (!index.has(target)) open(target);
        else if (onStack.has(target)) low.set(top.key, Math.min(low.get(top.key)!, index.get(target)!));
        continue;
      }
      work.pop();
      const parent = work.at(-1);
      if (parent) low.set(parent.key, Math.min(low.get(parent.key)!, low.get(top.key)!));
      if (low.get(top.key) !== index.get(top.key)) continue;
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== top.key);
      const cyclic = component.length > 1 || top.edges.includes(top.key);
      for (const key of component) {
        this.classified.add(key);
        if (cyclic) this.recursive.add(key);
      }
    }
  }

  /** The refs written inside `key`'s schema (not through them), as resolved pointers. */
  private edges(key: string): string[] {
    const known = this.edgesOf.get(key);
    if (known) return known;
    const found = new Set<string>();
    const resolution = this.resolver.resolve(key);
    const seen = new WeakSet<object>();
    const pending: unknown[] = resolution.ok ? [resolution.value] : [];
    while (pending.length > 0) {
      const node = pending.pop();
      if (node === null || typeof node !== 'object' || seen.has(node)) continue;
      seen.add(node);
      if (Array.isArray(node)) {
        for (const item of node) if (item !== null && typeof item === 'object') pending.push(item);
        continue;
      }
      if (!isJsonObject(node)) continue;
      // `$ref: "#"` and `$recursiveRef` name the resource they sit in: this one.
      if (node.$ref === '#' || typeof node.$recursiveRef === 'string') found.add(key);
      else if (typeof node.$ref === 'string') {
        const target = this.resolver.resolve(node.$ref);
        if (target.ok) found.add(target.pointer);
      }
      for (const name in node) {
        const value = node[name];
        // Only objects and lists can hold refs; text, numbers and flags are not walked.
        if (value === null || typeof value !== 'object') continue;
        if (name !== '$ref' && !DATA_KEYS.has(name) && !name.startsWith('x-')) pending.push(value);
      }
    }
    const edges = [...found];
    this.edgesOf.set(key, edges);
    return edges;
  }
}
