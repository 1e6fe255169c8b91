// OpenAI chat-completions message shapes (seed 001 `input.messages`). Objects are loose: upstreams and models
// send more fields than we read (name, annotations, audio, ...) and those must survive a round trip.
import { z } from 'zod';

export const ChatTextPart = z.looseObject({ type: z.literal('text'), text: z.string() });
export const ChatImagePart = z.looseObject({
  type: z.literal('image_url'),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.enum(['auto', 'low', 'high']).optional() }),
});
export const ChatAudioPart = z.looseObject({
  type: z.literal('input_audio'),
  input_audio: z.looseObject({ data: z.string(), format: z.string().min(1) }),
});
export const ChatFilePart = z.looseObject({ type: z.literal('file'), file: z.looseObject({}) });
export const ChatRefusalPart = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });

export const ChatUserContentPart = z.discriminatedUnion('type', [
  ChatTextPart,
  ChatImagePart,
  ChatAudioPart,
  ChatFilePart,
]);
export type ChatUserContentPart = z.infer<typeof ChatUserContentPart>;

export const ChatToolCall = z.looseObject({
  id: z.string().min(1),
  type: z.literal('function'),
  function: z.looseObject({
    name: z.string().min(1),
    /** JSON text exactly as the model produced it; it may not parse. */
    arguments: z.string(),
  }),
});
export type ChatToolCall = z.infer<typeof ChatToolCall>;

const TextContent = z.union([z.string(), z.array(ChatTextPart)]);

export const ChatSystemMessage = z.looseObject({
  role: z.literal('system'),
  content: TextContent,
  name: z.string().optional(),
});
export const ChatDeveloperMessage = z.looseObject({
  role: z.literal('developer'),
  content: TextContent,
  name: z.string().optional(),
});
export const ChatUserMessage = z.looseObject({
  role: z.literal('user'),
  content: z.union([z.string(), z.array(ChatUserContentPart)]),
  name: z.string().optional(),
});
export const ChatAssistantMessage = z.looseObject({
  role: z.literal('assistant'),
  content: z.union([z.string(), z.array(z.union([ChatTextPart, ChatRefusalPart]))]).nullish(),
  name: z.string().optional(),
  tool_calls: z.array(ChatToolCall).optional(),
  /** Chain of thought of reasoning models (DeepSeek and compatible servers). */
  reasoning_content: z.string().nullish(),
  refusal: z.string().nullish(),
});
export const ChatToolMessage = z.looseObject({
  role: z.literal('tool'),
  tool_call_id: z.string().min(1),
  content: TextContent,
});

export const ChatMessage = z.discriminatedUnion('role', [
  ChatSystemMessage,
  ChatDeveloperMessage,
  ChatUserMessage,
  ChatAssistantMessage,
  ChatToolMessage,
]);
export type ChatMessage = z.infer<typeof ChatMessage>;
export type ChatSystemMessage = z.infer<typeof ChatSystemMessage>;
export type ChatUserMessage = z.infer<typeof ChatUserMessage>;
export type ChatAssistantMessage = z.infer<typeof ChatAssistantMessage>;
export type ChatToolMessage = z.infer<typeof ChatToolMessage>;

/** A tool as the model sees it in the chat-completions `tools` array: what it does, never how it runs. */
export const ModelTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: z.string().min(1),
    description: z.string(),
    parameters: z.record(z.string(), z.unknown()),
  }),
});
export type ModelTool = z.infer<typeof ModelTool>;
