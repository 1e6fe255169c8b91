/**
 * The protocol's conversation (OpenAI chat format) as a Gemini `generateContent` request: system and
 * developer messages become the system instruction, assistant turns `model` contents (text, then one
 * `functionCall` part per tool call), tool messages `functionResponse` parts (named by the call they
 * answer) in a `user` content. Thought signatures an assistant turn kept (`provider_state`) go back on the
 * parts they came with, as Gemini requires for function calling with thinking models; a Gemini 3 turn
 * with tool calls and no kept signature (a resumed task's) gets the documented validator-skip value on its
 * first call, so the request is not refused.
 */
import {
  FunctionCallingConfigMode,
  type Content,
  type GenerateContentParameters,
  type Part,
} from '@google/genai';
import type { ChatMessage } from '@agentmesh/protocol';
import type { ChatRequest } from '../chat-types.js';
import { argumentsObject, textOf } from '../native/native-call.js';

export const GEMINI_API = 'gemini';

/** ai.google.dev/gemini-api/docs/thought-signatures: for turns whose signatures are not at hand. */
const SKIP_SIGNATURE_VALIDATION = 'skip_thought_signature_validator';

/** Models that think, whose thoughts are asked for (`includeThoughts`); older models refuse the setting. */
const THINKING_MODEL = /gemini-(2\.5|[3-9])/;
const SIGNATURES_REQUIRED = /gemini-[3-9]/;

export interface GeminiSignatures {
  text?: string;
  /** By tool call, in the turn's order; null where that call had none. */
  calls: (string | null)[];
}

export function geminiRequest(chat: ChatRequest): GenerateContentParameters {
  const system: string[] = [];
  const contents: Content[] = [];
  const callNames = new Map<string, string>();
  const push = (role: 'user' | 'model', parts: Part[]): void => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last !== undefined && last.role === role) last.parts?.push(...parts);
    else contents.push({ role, parts });
  };
  for (const message of chat.messages) {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text !== '') system.push(text);
        break;
      }
      case 'user':
        push('user', userParts(message.content));
        break;
      case 'assistant':
        for (const call of message.tool_calls ?? []) callNames.set(call.id, call.function.name);
        push('model', modelParts(message, SIGNATURES_REQUIRED.test(chat.model)));
        break;
      case 'tool':
        push('user', [
          {
            functionResponse: {
              id: message.tool_call_id,
              name: callNames.get(message.tool_call_id) ?? 'tool',
              response: { output: textOf(message.content) },
            },
          },
        ]);
        break;
    }
  }
  const config: NonNullable<GenerateContentParameters['config']> = {};
  if (system.length > 0) config.systemInstruction = system.join('\n\n');
  if (chat.temperature !== undefined) config.temperature = chat.temperature;
  if (chat.max_tokens !== undefined) config.maxOutputTokens = chat.max_tokens;
  if (THINKING_MODEL.test(chat.model)) config.thinkingConfig = { includeThoughts: true };
  if (chat.tools && chat.tools.length > 0) {
    config.tools = [
      {
        functionDeclarations: chat.tools.map(({ function: fn }) => ({
          name: fn.name,
          description: fn.description,
          parametersJsonSchema: fn.parameters,
        })),
      },
    ];
    const choice = chat.tool_choice;
    if (choice !== undefined) {
      config.toolConfig = {
        functionCallingConfig:
          choice === 'none'
            ? { mode: FunctionCallingConfigMode.NONE }
            : choice === 'auto'
              ? { mode: FunctionCallingConfigMode.AUTO }
              : choice === 'required'
                ? { mode: FunctionCallingConfigMode.ANY }
                : { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: [choice.function.name] },
      };
    }
  }
  return { model: chat.model, contents, config };
}

function userParts(content: unknown): Part[] {
  if (typeof content === 'string') return content === '' ? [] : [{ text: content }];
  if (!Array.isArray(content)) return [];
  const parts: Part[] = [];
  for (const part of content as Record<string, unknown>[]) {
    if (part['type'] === 'text' && typeof part['text'] === 'string') parts.push({ text: part['text'] });
    else if (part['type'] === 'image_url') {
      const url = (part['image_url'] as { url?: unknown } | undefined)?.url;
      if (typeof url !== 'string') continue;
      const data = /^data:([^;]+);base64,(.*)$/s.exec(url);
      parts.push(
        data
          ? { inlineData: { mimeType: data[1] ?? '', data: data[2] ?? '' } }
          : { fileData: { fileUri: url } },
      );
    }
  }
  return parts;
}

function modelParts(message: ChatMessage & { role: 'assistant' }, signaturesRequired: boolean): Part[] {
  const signatures = signaturesOf(message['provider_state']);
  const parts: Part[] = [];
  const text = textOf(message.content);
  if (text !== '') parts.push(signatures?.text ? { text, thoughtSignature: signatures.text } : { text });
  (message.tool_calls ?? []).forEach((call, index) => {
    const kept = signatures?.calls[index] ?? undefined;
    const signature =
      kept ??
      (signatures === undefined && signaturesRequired && index === 0 ? SKIP_SIGNATURE_VALIDATION : undefined);
    parts.push({
      functionCall: { id: call.id, name: call.function.name, args: argumentsObject(call.function.arguments) },
      ...(signature === undefined ? {} : { thoughtSignature: signature }),
    });
  });
  return parts;
}

function signaturesOf(state: unknown): GeminiSignatures | undefined {
  if (typeof state !== 'object' || state === null) return undefined;
  const { api, signatures } = state as { api?: unknown; signatures?: unknown };
  if (api !== GEMINI_API || typeof signatures !== 'object' || signatures === null) return undefined;
  const { text, calls } = signatures as { text?: unknown; calls?: unknown };
  return {
    ...(typeof text === 'string' ? { text } : {}),
    calls: Array.isArray(calls) ? calls.map((c) => (typeof c === 'string' ? c : null)) : [],
  };
}
