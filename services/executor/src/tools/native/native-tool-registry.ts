/**
 * The native tools this executor provides, by class name (what a task's `NATIVE` tool names) and by
 * function name (what the registry entry is keyed by). Both must be unique: two implementations of one
 * class, or two classes under one name, would make the mirrored registry ambiguous.
 */
import type { NativeTool } from '@agentmesh/protocol';
import type { NativeToolImplementation } from './native-tool.js';

export class NativeToolRegistry {
  readonly #byClass = new Map<string, NativeToolImplementation>();
  readonly #names = new Set<string>();

  constructor(tools: Iterable<NativeToolImplementation> = []) {
    for (const tool of tools) this.add(tool);
  }

  /** Throws when the class name or the function name is taken (a bug in the executor's wiring). */
  add(tool: NativeToolImplementation): this {
    if (this.#byClass.has(tool.className)) {
      throw new TypeError(`native tool class "${tool.className}" is registered twice`);
    }
    if (this.#names.has(tool.definition.name)) {
      throw new TypeError(`native tool name "${tool.definition.name}" is registered twice`);
    }
    this.#byClass.set(tool.className, tool);
    this.#names.add(tool.definition.name);
    return this;
  }

  /** The implementation of `className`, or undefined when this executor does not provide it. */
  get(className: string): NativeToolImplementation | undefined {
    return this.#byClass.get(className);
  }

  classNames(): string[] {
    return [...this.#byClass.keys()];
  }

  definitions(): NativeTool[] {
    return [...this.#byClass.values()].map((tool) => tool.definition);
  }
}
