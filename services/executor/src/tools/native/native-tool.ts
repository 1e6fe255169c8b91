/**
 * Seed 002 native tools: tools whose definition and logic live in this executor's code. The zod input
 * schema is the single source of truth: the JSON Schema the model sees (and the registry mirrors) is
 * generated from it, and the model's arguments are parsed with it before `run` gets them.
 */
import {
  describeZodError,
  ErrorCode,
  isFunctionName,
  ToolFormat,
  ToolType,
  type NativeTool,
} from '@agentmesh/protocol';
import { z } from 'zod';
import type { TaskAccount, ToolOutcome } from '../index.js';
import { toolFailure } from '../index.js';

/** What a native tool knows about the call it runs. */
export interface NativeToolContext {
  readonly callId: string;
  /** Aborted when the task is cancelled or runs out of time. */
  readonly signal: AbortSignal;
  /** The task's account, for tools that call account-scoped services. */
  readonly account: TaskAccount;
}

export interface NativeToolSpec<Input extends z.ZodObject> {
  /** The function name the model calls. */
  readonly name: string;
  readonly description: string;
  /** Seed 002 `execution_config.class_name`: the implementation's name, shared by every executor. */
  readonly className: string;
  readonly input: Input;
  /** Gets arguments the input schema accepted; expected failures are outcomes, not exceptions. */
  readonly run: (input: z.output<Input>, ctx: NativeToolContext) => Promise<ToolOutcome>;
}

/** A native tool as the registry holds it: its canonical definition and a runner for raw arguments. */
export interface NativeToolImplementation {
  readonly className: string;
  /** The canonical `NATIVE` definition mirrored into `mesh_tools`. */
  readonly definition: NativeTool;
  /** Parses `args` with the tool's input schema, then runs it. */
  run(args: Readonly<Record<string, unknown>>, ctx: NativeToolContext): Promise<ToolOutcome>;
}

const CLASS_NAME = /^[A-Za-z][A-Za-z0-9_]{0,127}$/;

/** Namespace of the ids native tools get in `origin` (seed 003 style `core:...`), for listing by namespace. */
const NATIVE_NAMESPACE = 'core';

/**
 * The JSON Schema the model sees for a native tool's input: what zod generates, as argument input
 * (defaults optional). Throws when the schema cannot be represented (a bug in the tool's definition).
 */
export function nativeToolParameters(input: z.ZodObject): NativeTool['parameters'] {
  return z.toJSONSchema(input, { target: 'draft-2020-12', io: 'input' }) as NativeTool['parameters'];
}

/** Defines a native tool; throws on a definition that could never be registered (a bug). */
export function defineNativeTool<Input extends z.ZodObject>(
  spec: NativeToolSpec<Input>,
): NativeToolImplementation {
  if (!isFunctionName(spec.name)) {
    throw new TypeError(`native tool name "${spec.name}" is not a legal function name`);
  }
  if (!CLASS_NAME.test(spec.className)) {
    throw new TypeError(`native tool class name "${spec.className}" must match ${CLASS_NAME.source}`);
  }
  const definition: NativeTool = {
    type: ToolType.NATIVE,
    name: spec.name,
    description: spec.description,
    parameters: nativeToolParameters(spec.input),
    origin: { format: ToolFormat.NATIVE, id: `${NATIVE_NAMESPACE}:${spec.name}` },
    class_name: spec.className,
  };
  return {
    className: spec.className,
    definition,
    async run(args, ctx) {
      const parsed = spec.input.safeParse(args);
      if (!parsed.success) {
        // The loop validated against the generated schema already; refinements zod alone knows land here.
        const { message, detail } = describeZodError(parsed.error);
        return toolFailure(ErrorCode.INVALID_REQUEST, `invalid arguments: ${message}`, detail);
      }
      return spec.run(parsed.data, ctx);
    },
  };
}
