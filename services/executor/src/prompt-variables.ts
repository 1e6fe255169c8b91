/**
 * Seed 001's `input.variables` in the conversation: `{{name}}` in a system, developer or user message is
 * replaced by that variable before the model sees it, so an agent's system prompt can say "today is
 * {{current_time}}" and a workflow can hand it `file_url`. `{{a.b}}` reads into an object variable
 * (`{{list.0}}` into an array);
 * spaces inside the braces are allowed. A string goes in as it is, anything else as JSON. A name with no
 * variable stays as written, so text that merely looks like a placeholder is not lost. Assistant and
 * tool messages are history the model and the tools wrote and are left alone.
 */
import type { ChatMessage, JsonObject } from '@agentmesh/protocol';

const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;

const TEMPLATED_ROLES: ReadonlySet<ChatMessage['role']> = new Set(['system', 'developer', 'user']);

export function renderVariables(messages: readonly ChatMessage[], variables: JsonObject): ChatMessage[] {
  if (Object.keys(variables).length === 0) return [...messages];
  const render = (text: string) => renderText(text, variables);
  return messages.map((message) => {
    if (!TEMPLATED_ROLES.has(message.role)) return message;
    const content = message.content;
    if (typeof content === 'string') return { ...message, content: render(content) } as ChatMessage;
    if (!Array.isArray(content)) return message;
    const parts = content.map((part) =>
      part.type === 'text' && typeof part.text === 'string' ? { ...part, text: render(part.text) } : part,
    );
    return { ...message, content: parts } as ChatMessage;
  });
}

export function renderText(text: string, variables: JsonObject): string {
  if (!text.includes('{{')) return text;
  return text.replace(PLACEHOLDER, (placeholder, path: string) => {
    const value = lookup(variables, path.split('.'));
    if (value === undefined) return placeholder;
    return typeof value === 'string' ? value : JSON.stringify(value);
  });
}

function lookup(variables: JsonObject, path: readonly string[]): unknown {
  let value: unknown = variables;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (Array.isArray(value) && !/^\d+$/.test(key)) return undefined;
    if (!Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}
