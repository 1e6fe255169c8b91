/**
 * A tool box tool made ready for recall (seed 004 §4.4): its detail plus the function schema converted
 * from its `api_spec` and where each argument of that schema goes in the request. This is what the tool
 * cache holds per (box_id, tool_id), in memory and in KV, so it is plain JSON with a schema to read it back.
 */
import { convertApiSpec, type ConversionOptions } from '@agentmesh/openapi';
import { JsonObject, JsonSchemaObject } from '@agentmesh/protocol';
import { z } from 'zod';
import { SchemaConversionError } from './recall-errors.js';
import type { ToolDetail, ToolRef } from './upstream/tool-box.js';

/** Where one argument of the converted schema is placed (a subset of the converter's binding). */
export const ArgumentSlot = z.object({
  /** The argument's name in `parameters.properties`. */
  property: z.string(),
  in: z.enum(['path', 'query', 'header', 'cookie', 'body']),
  /** Name in its location; absent when the argument is the whole request body. */
  name: z.string().optional(),
  required: z.boolean(),
});
export type ArgumentSlot = z.infer<typeof ArgumentSlot>;

export const ConvertedTool = z.object({
  name: z.string().min(1),
  description: z.string(),
  /** The tool detail's `api_spec`, returned as `original_schema`. */
  api_spec: JsonObject,
  parameters: JsonSchemaObject,
  arguments: z.array(ArgumentSlot),
});
export type ConvertedTool = z.infer<typeof ConvertedTool>;

/** Converts a tool's `api_spec`; a spec the converter cannot read is a {@link SchemaConversionError}. */
export function convertTool(
  detail: ToolDetail,
  ref: ToolRef,
  options: ConversionOptions = {},
): ConvertedTool {
  const apiSpec = JsonObject.safeParse(detail.api_spec);
  if (!apiSpec.success) throw new SchemaConversionError(ref.boxId, ref.toolId, apiSpec.error);
  let conversion: ReturnType<typeof convertApiSpec>;
  try {
    conversion = convertApiSpec(apiSpec.data, { ...options, name: detail.name });
  } catch (error) {
    throw new SchemaConversionError(ref.boxId, ref.toolId, error);
  }
  const parameters = JsonSchemaObject.safeParse(conversion.parameters);
  if (!parameters.success) throw new SchemaConversionError(ref.boxId, ref.toolId, parameters.error);
  return {
    name: detail.name,
    description: detail.description,
    api_spec: apiSpec.data,
    parameters: parameters.data,
    arguments: conversion.arguments.map(({ property, in: location, name, required }) =>
      name === undefined ? { property, in: location, required } : { property, in: location, name, required },
    ),
  };
}
