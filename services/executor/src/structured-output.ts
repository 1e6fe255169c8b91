/**
 * Structured output: a task whose agent (or submission) gives an output JSON Schema gets its final answer
 * checked against it and delivered parsed in `done.output`. The schema reaches the model as an instruction
 * in the system prompt, never as `response_format`, because strict OpenAI-compatible servers stop calling
 * tools once a response format is set, and the loop's tools must stay usable before the answer. An answer
 * that does not parse or validate is sent back to the model with what failed, a bounded number of times.
 */
import type { ChatMessage } from '@agentmesh/protocol';
import { validateJsonValue } from './tools/argument-validation.js';

/** Answers sent back for correction before the task ends with OUTPUT_INVALID. */
export const MAX_OUTPUT_CORRECTIONS = 2;

/** The conversation with the schema instruction added to its (first) system message, or a new one. */
export function withOutputInstruction(messages: readonly ChatMessage[], schema: object): ChatMessage[] {
  const instruction = [
    'When you give your final answer (after any tool calls you need), answer with only one JSON value',
    'that validates against this JSON Schema, with no other text and no code fence:',
    JSON.stringify(schema),
  ].join(' ');
  const [first, ...rest] = messages;
  if (first?.role === 'system' && typeof first.content === 'string') {
    return [{ ...first, content: `${first.content}\n\n${instruction}` }, ...rest];
  }
  return [{ role: 'system', content: instruction }, ...messages];
}

export type OutputCheck = { ok: true; value: unknown } | { ok: false; reason: string; detail?: unknown };

/** The final answer parsed and validated; a fenced (```json) answer is read inside its fence. */
export function checkOutput(schema: object, answer: string): OutputCheck {
  const text = unfenced(answer.trim());
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: `the answer is not JSON (${why})` };
  }
  const checked = validateJsonValue(schema, parsed);
  if (checked.ok) return { ok: true, value: checked.value };
  return {
    ok: false,
    reason: `the answer does not validate against the output schema: ${checked.message}`,
    detail: { issues: checked.issues },
  };
}

/** What the model is told after an answer that failed the check. */
export function correctionMessage(reason: string): ChatMessage {
  return {
    role: 'user',
    content: `${reason}. Answer again with only the JSON value the output schema asks for.`,
  };
}

function unfenced(text: string): string {
  const fenced = /^```[a-zA-Z]*\s*\n([\s\S]*?)\n?```$/.exec(text);
  return fenced?.[1] ?? text;
}
