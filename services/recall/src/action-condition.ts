/**
 * Seed 004 phase 3, `action_type.condition`: ontology-query's condition (`CondCfg`: `and`/`or` over
 * `sub_conditions`, or `{field, operation, value, value_from}`) compiled into a predicate over what recall
 * knows of one object. No `eval`, no regular expression built from the condition (`like` is matched by a
 * linear wildcard matcher), bounded depth and width. A condition that cannot be read is an
 * {@link UnreadableConditionError} naming the offending path, raised before anything is evaluated.
 */
import { ConditionOperation, ConditionValueFrom } from '@agentmesh/protocol';

/** What a condition's `field` names: the object's identity, the action's parameters, the account. */
export type ConditionContext = Readonly<Record<string, unknown>>;
export type ConditionPredicate = (context: ConditionContext) => boolean;

/** ontology-query's own bound on sub-conditions. */
export const MAX_SUB_CONDITIONS = 100;
export const MAX_CONDITION_DEPTH = 32;

export class ConditionSyntaxError extends Error {
  constructor(
    readonly path: string,
    readonly problem: string,
  ) {
    super(`${path || '(condition)'}: ${problem}`);
    this.name = 'ConditionSyntaxError';
  }
}

const Op = ConditionOperation;
const WITHOUT_VALUE: ReadonlySet<string> = new Set([
  Op.EXIST,
  Op.NOT_EXIST,
  Op.EMPTY,
  Op.NOT_EMPTY,
  Op.NULL,
  Op.NOT_NULL,
  Op.TRUE,
  Op.FALSE,
]);
const KNOWN: ReadonlySet<string> = new Set(Object.values(Op));

/** Compiles a condition; throws {@link ConditionSyntaxError} for anything it cannot read. */
export function compileCondition(condition: unknown): ConditionPredicate {
  return compile(condition, '', 0);
}

function compile(node: unknown, path: string, depth: number): ConditionPredicate {
  if (depth > MAX_CONDITION_DEPTH)
    throw new ConditionSyntaxError(path, `nested deeper than ${MAX_CONDITION_DEPTH}`);
  if (!isRecord(node)) throw new ConditionSyntaxError(path, 'a condition must be an object');
  const at = (key: string) => (path === '' ? key : `${path}.${key}`);
  const operation = node.operation;
  if (typeof operation !== 'string' || operation === '')
    throw new ConditionSyntaxError(at('operation'), 'an operation is required');
  if (!KNOWN.has(operation))
    throw new ConditionSyntaxError(
      at('operation'),
      `operation ${JSON.stringify(operation)} cannot be evaluated by recall`,
    );

  if (operation === Op.AND || operation === Op.OR) {
    const subs = node.sub_conditions;
    if (!Array.isArray(subs) || subs.length === 0)
      throw new ConditionSyntaxError(
        at('sub_conditions'),
        `${operation} needs a non-empty list of sub_conditions`,
      );
    if (subs.length > MAX_SUB_CONDITIONS)
      throw new ConditionSyntaxError(at('sub_conditions'), `more than ${MAX_SUB_CONDITIONS} sub_conditions`);
    const parts = subs.map((sub, index) => compile(sub, `${at('sub_conditions')}[${index}]`, depth + 1));
    return operation === Op.AND
      ? (context) => parts.every((part) => part(context))
      : (context) => parts.some((part) => part(context));
  }

  const field = node.field;
  if (typeof field !== 'string' || field === '')
    throw new ConditionSyntaxError(at('field'), 'a field name is required');
  const valueFrom = node.value_from ?? ConditionValueFrom.CONST;
  if (valueFrom !== ConditionValueFrom.CONST && valueFrom !== ConditionValueFrom.FIELD) {
    throw new ConditionSyntaxError(
      at('value_from'),
      `value_from ${JSON.stringify(valueFrom)} cannot be evaluated by recall (const or field)`,
    );
  }
  const read = (context: ConditionContext) => fieldValue(context, field);
  if (WITHOUT_VALUE.has(operation)) return unaryPredicate(operation, read);

  if (!Object.hasOwn(node, 'value'))
    throw new ConditionSyntaxError(at('value'), `${operation} needs a value`);
  const value = node.value;
  if (valueFrom === ConditionValueFrom.FIELD) {
    if (typeof value !== 'string' || value === '')
      throw new ConditionSyntaxError(at('value'), 'with value_from field, the value must name a field');
    return (context) => binary(operation, read(context), fieldValue(context, value));
  }
  checkConstant(operation, value, at('value'));
  return (context) => binary(operation, read(context), value);
}

function checkConstant(operation: string, value: unknown, path: string): void {
  if (operation === Op.IN || operation === Op.NOT_IN) {
    if (!Array.isArray(value)) throw new ConditionSyntaxError(path, `${operation} needs a list of values`);
  } else if (operation === Op.RANGE || operation === Op.OUT_RANGE) {
    if (!Array.isArray(value) || value.length !== 2 || !value.every(isScalar))
      throw new ConditionSyntaxError(path, `${operation} needs [low, high]`);
  } else if (
    operation === Op.LIKE ||
    operation === Op.NOT_LIKE ||
    operation === Op.PREFIX ||
    operation === Op.NOT_PREFIX
  ) {
    if (typeof value !== 'string') throw new ConditionSyntaxError(path, `${operation} needs a string`);
  } else if (operation !== Op.CONTAIN && operation !== Op.NOT_CONTAIN && !isScalar(value)) {
    throw new ConditionSyntaxError(path, `${operation} needs a string, number or boolean`);
  }
}

function unaryPredicate(operation: string, read: (context: ConditionContext) => unknown): ConditionPredicate {
  switch (operation) {
    case Op.EXIST:
      return (context) => read(context) !== undefined;
    case Op.NOT_EXIST:
      return (context) => read(context) === undefined;
    case Op.EMPTY:
      return (context) => isEmpty(read(context));
    case Op.NOT_EMPTY:
      return (context) => !isEmpty(read(context));
    case Op.NULL:
      return (context) => read(context) == null;
    case Op.NOT_NULL:
      return (context) => read(context) != null;
    case Op.TRUE:
      return (context) => asBoolean(read(context)) === true;
    default:
      return (context) => asBoolean(read(context)) === false;
  }
}

/** Negated operations are the plain negation of their positive form (an absent field is "not equal"). */
function binary(operation: string, left: unknown, right: unknown): boolean {
  switch (operation) {
    case Op.EQ:
    case Op.EQ_ALIAS:
      return equals(left, right);
    case Op.NOT_EQ:
      return !equals(left, right);
    case Op.GT:
      return order(left, right, (c) => c > 0);
    case Op.GTE:
      return order(left, right, (c) => c >= 0);
    case Op.LT:
      return order(left, right, (c) => c < 0);
    case Op.LTE:
      return order(left, right, (c) => c <= 0);
    case Op.IN:
      return isIn(left, right);
    case Op.NOT_IN:
      return !isIn(left, right);
    case Op.LIKE:
      return like(left, right);
    case Op.NOT_LIKE:
      return !like(left, right);
    case Op.CONTAIN:
      return contains(left, right);
    case Op.NOT_CONTAIN:
      return !contains(left, right);
    case Op.PREFIX:
      return prefix(left, right);
    case Op.NOT_PREFIX:
      return !prefix(left, right);
    case Op.RANGE:
      return inRange(left, right);
    default:
      return !inRange(left, right);
  }
}

function fieldValue(context: ConditionContext, field: string): unknown {
  return Object.hasOwn(context, field) ? context[field] : undefined;
}

type Scalar = string | number | boolean;

function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A number, or a string that spells one (identities often carry numbers as strings). */
function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && value.trim() !== '') {
    const parsed = Number(value);
    return Number.isFinite(parsed) ? parsed : undefined;
  }
  return undefined;
}

function asBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (value === 'true') return true;
  if (value === 'false') return false;
  return undefined;
}

function equals(left: unknown, right: unknown): boolean {
  if (!isScalar(left) || !isScalar(right)) return false;
  if (typeof left === typeof right) return left === right;
  if (typeof left === 'boolean' || typeof right === 'boolean') return asBoolean(left) === asBoolean(right);
  const [a, b] = [asNumber(left), asNumber(right)];
  return a !== undefined && a === b;
}

/** Numbers (or numeric strings) by value, strings by code points (ISO dates order this way); else false. */
function order(left: unknown, right: unknown, holds: (comparison: number) => boolean): boolean {
  const [a, b] = [asNumber(left), asNumber(right)];
  if (a !== undefined && b !== undefined && (typeof left === 'number' || typeof right === 'number'))
    return holds(a - b);
  if (typeof left === 'string' && typeof right === 'string')
    return holds(left < right ? -1 : left > right ? 1 : 0);
  if (a !== undefined && b !== undefined) return holds(a - b);
  return false;
}

function isIn(left: unknown, right: unknown): boolean {
  const candidates = Array.isArray(right) ? right : [right];
  const values = Array.isArray(left) ? left : [left];
  return values.some((value) => candidates.some((candidate) => equals(value, candidate)));
}

function inRange(left: unknown, right: unknown): boolean {
  if (!Array.isArray(right) || right.length !== 2) return false;
  return order(left, right[0], (c) => c >= 0) && order(left, right[1], (c) => c < 0);
}

function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return undefined;
}

function prefix(left: unknown, right: unknown): boolean {
  const [value, start] = [text(left), text(right)];
  return value !== undefined && start !== undefined && value.startsWith(start);
}

function contains(left: unknown, right: unknown): boolean {
  if (Array.isArray(left)) {
    const wanted = Array.isArray(right) ? right : [right];
    return wanted.every((item) => left.some((element) => equals(element, item)));
  }
  const [value, part] = [text(left), text(right)];
  return value !== undefined && part !== undefined && value.includes(part);
}

function isEmpty(value: unknown): boolean {
  if (value == null || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  return isRecord(value) && Object.keys(value).length === 0;
}

/**
 * SQL `LIKE`: `%` any run of characters, `_` one character, `\` escapes the next. Matched with the greedy
 * backtrack-once algorithm: time linear in the product of the lengths, whatever the pattern.
 */
function like(left: unknown, right: unknown): boolean {
  const value = text(left);
  if (value === undefined || typeof right !== 'string') return false;
  return matchLike(value, right).matches;
}

/** `value LIKE pattern`, with the number of steps the matcher took (its work, for tests to bound). */
export function matchLike(value: string, pattern: string): { matches: boolean; steps: number } {
  const tokens = likeTokens(pattern);
  const chars = [...value];
  let v = 0;
  let t = 0;
  let starToken = -1;
  let starValue = 0;
  let steps = 0;
  while (v < chars.length) {
    steps += 1;
    const token = tokens[t];
    if (token !== undefined && token !== ANY_RUN && (token === ANY_ONE || token === chars[v])) {
      v += 1;
      t += 1;
    } else if (token === ANY_RUN) {
      starToken = t;
      starValue = v;
      t += 1;
    } else if (starToken >= 0) {
      t = starToken + 1;
      starValue += 1;
      v = starValue;
    } else {
      return { matches: false, steps };
    }
  }
  while (tokens[t] === ANY_RUN) t += 1;
  return { matches: t === tokens.length, steps };
}

const ANY_RUN = Symbol('%');
const ANY_ONE = Symbol('_');
type LikeToken = string | typeof ANY_RUN | typeof ANY_ONE;

function likeTokens(pattern: string): LikeToken[] {
  const tokens: LikeToken[] = [];
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i += 1) {
    const char = chars[i] as string;
    if (char === '\\' && i + 1 < chars.length) tokens.push(chars[(i += 1)] as string);
    else if (char === '%') tokens.push(ANY_RUN);
    else if (char === '_') tokens.push(ANY_ONE);
    else tokens.push(char);
  }
  return tokens;
}
