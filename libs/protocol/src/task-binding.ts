// What a task's sealed vault is bound to. The vault's additional authenticated data is derived from this
// text, so the credentials inside open only within the exact task they were sealed for: the same account,
// account type, user, trace id, workflow and the agent version it runs (number and digest), input, limits,
// model endpoint and the same tools with the same targets and auth mappings. A captured task re-published
// with any of these changed (another account, another agent version, a tool URL or model base_url pointed
// elsewhere) carries a vault that no executor can open.
//
// The text is a canonical JSON encoding (object keys sorted, `undefined` left out, arrays in order) of the
// parsed task minus its vault, so the sealer and the opener derive the same bytes from the same typed task
// whatever order the fields travelled in. Both sides must compute it from data parsed with the bus
// schemas, so that defaults are applied the same way.
import type { BoundTask } from './task.js';

/** Names the scheme inside the bound text, so a later scheme can never collide with this one. */
export const TASK_BINDING_SCHEME = 'agentmesh/task-binding/v1';

/** The canonical text a task's vault is bound to. */
export function taskBinding(task: BoundTask): string {
  // A sealed task carries its vault beside the rest: the vault is what gets bound, never part of the
  // binding. Every other part of the runtime config is bound, so a field added later needs no change here.
  const { vault: _vault, ...runtimeConfig } = task.runtime_config as BoundTask['runtime_config'] & {
    vault?: unknown;
  };
  return canonicalJson({
    scheme: TASK_BINDING_SCHEME,
    task_meta: task.task_meta,
    input: task.input,
    runtime_config: runtimeConfig,
    limits: task.limits,
  });
}

/**
 * JSON with object keys in code-unit order and `undefined` members left out: equal values give equal
 * text. Values must be JSON data (no functions, symbols, bigints, cycles or non-finite numbers).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const text = JSON.stringify(value);
    if (text === undefined) throw new TypeError(`not JSON data: ${typeof value}`);
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('not JSON data: ' + text);
    return text;
  }
  if (Array.isArray(value)) {
    return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  }
  const members = Object.keys(value)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${members.join(',')}}`;
}
