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
 *   one tool per distinct action, each with an `action_id` and a legal function name made from it, so the
 *   same action recalled twice (or for two identities) is one tool.
 * - Names, description, api_url and the fixed-parameter choices follow the deployment's conversion rules
 *   (conversion-rules.ts), whose defaults are what the list above says.
 */
import { createHash } from 'node:crypto';
import { mapParametersBySchema } from '@agentmesh/openapi';
import {
  toFunctionName,
  type Action,
  type DynamicTool,
  type FixedParams,
  type JsonSchemaObject,
} from '@agentmesh/protocol';
import { DEFAULT_CONVERSION_RULES, fillTemplate, type ConversionRules } from './conversion-rules.js';
import type { ArgumentSlot, ConvertedTool } from './converted-tool.js';
import { stableJson } from './stable-json.js';

type FixedLocation = Exclude<keyof FixedParams, 'cookie'>;
const FIXED_LOCATIONS: readonly string[] = ['header', 'path', 'query', 'body'] satisfies FixedLocation[];
const MAX_NAME_LENGTH = 64;
const ACTION_ID_LENGTH = 12;

/** What the name and description templates may name besides the tool (empty when unknown). */
export interface ToolOrigin {
  knId?: string;
  atId?: string;
  boxId?: string;
  toolId?: string;
  actionTypeName?: string;
}

/**
 * One dynamic tool per action: every distinct one when `plural` (an action seen twice is one tool, as its
 * name is made from its content), else only the first (seed §2.3.1).
 */
export function dynamicToolsFor(
  tool: ConvertedTool,
  actions: readonly Action[],
  apiUrl: string,
  plural: boolean,
  rules: ConversionRules = DEFAULT_CONVERSION_RULES,
  origin: ToolOrigin = {},
): DynamicTool[] {
  const values = {
    tool_name: tool.name,
    tool_description: tool.description,
    kn_id: origin.knId ?? '',
    at_id: origin.atId ?? '',
    box_id: origin.boxId ?? '',
    tool_id: origin.toolId ?? '',
    action_type_name: origin.actionTypeName ?? '',
  };
  const description = fillTemplate(rules.description, values);
  if (!plural) {
    const [first] = actions;
    if (first === undefined) return [];
    return [
      {
        ...dynamicTool(tool, first, apiUrl, rules),
        name: fillTemplate(rules.tool_name, values),
        description,
      },
    ];
  }
  const base = toFunctionName(tool.name);
  const tools = new Map<string, DynamicTool>();
  for (const action of actions) {
    const actionId = actionIdOf(action);
    // {tool_name} gives way so that the action id, which tells the tools apart, is never cut off.
    const room =
      MAX_NAME_LENGTH -
      fillTemplate(rules.plural_tool_name, { ...values, tool_name: '', action_id: actionId }).length;
    const name = toFunctionName(
      fillTemplate(rules.plural_tool_name, {
        ...values,
        tool_name: base.slice(0, Math.max(0, room)),
        action_id: actionId,
      }),
    );
    if (!tools.has(name))
      tools.set(name, {
        ...dynamicTool(tool, action, apiUrl, rules),
        name,
        description,
        action_id: actionId,
      });
  }
  return [...tools.values()];
}

/** A stable id of an action (a digest of its content), so recalling the same object twice gives the same id. */
export function actionIdOf(action: Action): string {
  return createHash('sha256').update(stableJson(action)).digest('hex').slice(0, ACTION_ID_LENGTH);
}

function dynamicTool(
  tool: ConvertedTool,
  action: Action,
  apiUrl: string,
  rules: ConversionRules,
): DynamicTool {
  const fixed = fixedParams(tool, action, rules);
  return {
    name: tool.name,
    description: tool.description,
    parameters: rules.fixed_params.hide_fixed
      ? withoutFixedArguments(tool.parameters, tool.arguments, fixed)
      : tool.parameters,
    api_url: apiUrl,
    original_schema: tool.api_spec,
    fixed_params: fixed,
  };
}

function fixedParams(tool: ConvertedTool, action: Action, rules: ConversionRules): FixedParams {
  const mapped = mapParametersBySchema(action.parameters, tool.api_spec);
  const fixed: FixedParams = {
    header: mapped.header,
    path: mapped.path,
    query: mapped.query,
    body: mapped.body,
    ...(mapped.cookie === undefined ? {} : { cookie: mapped.cookie }),
  };
  moveUndeclared(fixed, tool.arguments, rules.fixed_params.undeclared_location);
  if (!rules.fixed_params.pin_single_valued) return fixed;
  for (const slot of tool.arguments) {
    if (!slot.required || slot.name === undefined || !isFixedLocation(slot.in)) continue;
    const pinned = pinnedValue(tool.parameters.properties?.[slot.property]);
    if (pinned !== undefined && !hasValue(fixed, slot.in, slot.name))
      fixed[slot.in][slot.name] = pinned.value;
  }
  return fixed;
}

/**
 * The mapping puts every parameter the spec does not declare in the body (the seed's rule); a deployment may
 * want them elsewhere. A body the spec takes as one whole argument declares nothing by name, so nothing moves.
 */
function moveUndeclared(fixed: FixedParams, slots: readonly ArgumentSlot[], location: FixedLocation): void {
  if (location === 'body' || slots.some((slot) => slot.in === 'body' && slot.name === undefined)) return;
  const declared = new Set(slots.filter((slot) => slot.in === 'body').map((slot) => slot.name));
  for (const [key, value] of Object.entries(fixed.body)) {
    if (declared.has(key)) continue;
    fixed[location][key] = value;
    delete fixed.body[key];
  }
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
