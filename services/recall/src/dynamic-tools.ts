/**
 * Seed 004 §4.3/§2.3: from a converted tool and the actions of an action query, the `_dynamic_tools`.
 *
 * - `fixed_params` are the action's `parameters`, placed by the spec (`mapParametersBySchema`, which falls
 *   back to naming when the spec's parameters cannot be read).
 * - A required argument the spec pins to a single value (`enum` of one, or `const`) is fixed as well: the
 *   model has no choice to make (the seed's appendix fixes `X-HTTP-Method-Override: GET` this way).
 * - Arguments that are fixed are left out of the model's `parameters` (and of `required`), as in the seed's
 *   examples: the model is asked only for what is still open. `original_schema` keeps the whole spec.
 * - Singular recall answers with `actions[0]` under the tool's own name (seed §2.3.1); plural recall answers
 *   one tool per action, each with an `action_id` and a distinct legal function name.
 */
import { createHash } from 'node:crypto';
import { FunctionNameRegistry, mapParametersBySchema } from '@agentmesh/openapi';
import {
  toFunctionName,
  type Action,
  type DynamicTool,
  type FixedParams,
  type JsonSchemaObject,
} from '@agentmesh/protocol';
import type { ArgumentSlot, ConvertedTool } from './converted-tool.js';
import { stableJson } from './stable-json.js';

type FixedLocation = Exclude<keyof FixedParams, 'cookie'>;
const FIXED_LOCATIONS: readonly string[] = ['header', 'path', 'query', 'body'] satisfies FixedLocation[];
const MAX_NAME_LENGTH = 64;
const ACTION_ID_LENGTH = 12;

/** One dynamic tool per action: all of them when `plural`, else only the first (seed §2.3.1). */
export function dynamicToolsFor(
  tool: ConvertedTool,
  actions: readonly Action[],
  apiUrl: string,
  plural: boolean,
): DynamicTool[] {
  if (!plural) {
    const [first] = actions;
    return first === undefined ? [] : [dynamicTool(tool, first, apiUrl)];
  }
  const actionIds = new FunctionNameRegistry();
  const names = new FunctionNameRegistry();
  const base = toFunctionName(tool.name);
  return actions.map((action) => {
    const actionId = actionIds.claim(actionIdOf(action));
    const name = names.claim(`${base.slice(0, MAX_NAME_LENGTH - actionId.length - 1)}_${actionId}`);
    return { ...dynamicTool(tool, action, apiUrl), name, action_id: actionId };
  });
}

/** A stable id of an action (a digest of its content), so recalling the same object twice gives the same id. */
export function actionIdOf(action: Action): string {
  return createHash('sha256').update(stableJson(action)).digest('hex').slice(0, ACTION_ID_LENGTH);
}

function dynamicTool(tool: ConvertedTool, action: Action, apiUrl: string): DynamicTool {
  const fixed = fixedParams(tool, action);
  return {
    name: tool.name,
    description: tool.description,
    parameters: withoutFixedArguments(tool.parameters, tool.arguments, fixed),
    api_url: apiUrl,
    original_schema: tool.api_spec,
    fixed_params: fixed,
  };
}

function fixedParams(tool: ConvertedTool, action: Action): FixedParams {
  const mapped = mapParametersBySchema(action.parameters, tool.api_spec);
  const fixed: FixedParams = {
    header: mapped.header,
    path: mapped.path,
    query: mapped.query,
    body: mapped.body,
    ...(mapped.cookie === undefined ? {} : { cookie: mapped.cookie }),
  };
  for (const slot of tool.arguments) {
    if (!slot.required || slot.name === undefined || !isFixedLocation(slot.in)) continue;
    const pinned = pinnedValue(tool.parameters.properties?.[slot.property]);
    if (pinned !== undefined && !hasValue(fixed, slot.in, slot.name))
      fixed[slot.in][slot.name] = pinned.value;
  }
  return fixed;
}

function withoutFixedArguments(
  parameters: JsonSchemaObject,
  slots: readonly ArgumentSlot[],
  fixed: FixedParams,
): JsonSchemaObject {
  const hidden = new Set(
    slots
      .filter(
        (slot) => slot.name !== undefined && isFixedLocation(slot.in) && hasValue(fixed, slot.in, slot.name),
      )
      .map((slot) => slot.property),
  );
  if (hidden.size === 0) return parameters;
  const properties = Object.fromEntries(
    Object.entries(parameters.properties ?? {}).filter(([property]) => !hidden.has(property)),
  );
  const { required, ...rest } = parameters;
  return required === undefined
    ? { ...rest, properties }
    : { ...rest, properties, required: required.filter((property) => !hidden.has(property)) };
}

function isFixedLocation(location: string): location is FixedLocation {
  return FIXED_LOCATIONS.includes(location);
}

/** Header names are case-insensitive; the other locations are not. */
function hasValue(fixed: FixedParams, location: FixedLocation, name: string): boolean {
  const values = fixed[location];
  if (location !== 'header') return Object.hasOwn(values, name);
  const lower = name.toLowerCase();
  return Object.keys(values).some((key) => key.toLowerCase() === lower);
}

/** The one value a schema allows (`const`, or an `enum` of one), if it allows only one. */
function pinnedValue(schema: unknown): { value: unknown } | undefined {
  if (schema === null || typeof schema !== 'object') return undefined;
  const { const: constant, enum: allowed } = schema as { const?: unknown; enum?: unknown };
  if (constant !== undefined) return { value: constant };
  if (Array.isArray(allowed) && allowed.length === 1) return { value: allowed[0] };
  return undefined;
}
