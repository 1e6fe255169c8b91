// A conversion as an entry of an OpenAI chat-completions `tools` array.

import type { OperationConversion } from './conversion.js';
import type { FunctionParameters } from './json-schema.js';

export interface OpenAiTool {
  type: 'function';
  function: { name: string; description: string; parameters: FunctionParameters; strict?: true };
}

export function toOpenAiTool(
  conversion: Pick<OperationConversion, 'name' | 'description' | 'parameters' | 'strict'>,
): OpenAiTool {
  return {
    type: 'function',
    function: {
      name: conversion.name,
      description: conversion.description,
      parameters: conversion.parameters,
      ...(conversion.strict ? { strict: true as const } : {}),
    },
  };
}
