/**
 * An MCP `tools/call` result as the model and the task's events get it. Text content is the answer;
 * `structuredContent` is kept as it is; images, audio and resources are passed as references (their kind,
 * MIME type, size and SHA-256, a resource's URI), never as inlined blobs: base64 in the conversation costs
 * the model's context and the event stream's size, and tells the model nothing it can read. `isError` is a
 * failed result (TOOL_ERROR) carrying the server's text. Text past `maxBytes` (TOOL_RESULT_MAX_BYTES) is cut
 * off and marked, and structured content larger than that is replaced by its size: a server does not get to
 * flood the model's context or the task's events.
 */
import { createHash } from 'node:crypto';
import { ErrorCode } from '@agentmesh/protocol';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { truncationMarker } from '../http/response-reader.js';
import { toolFailure, toolSuccess, type ToolOutcome } from '../tool-outcome.js';

/** Where a reference points: the call that produced the content and its index in the result. */
export interface McpResultOrigin {
  readonly server: string;
  readonly tool: string;
  readonly callId: string;
}

export type McpContentReference =
  | {
      type: 'image' | 'audio';
      ref: string;
      mime_type: string;
      size_bytes: number;
      sha256: string;
    }
  | { type: 'resource_link'; uri: string; name?: string; mime_type?: string }
  | { type: 'resource'; ref: string; uri: string; mime_type?: string; size_bytes: number };

export function mcpOutcome(result: CallToolResult, origin: McpResultOrigin, maxBytes: number): ToolOutcome {
  const texts: string[] = [];
  const references: McpContentReference[] = [];
  result.content.forEach((part, index) => {
    const ref = `mcp://${origin.server}/${origin.tool}/${origin.callId}/${index}`;
    switch (part.type) {
      case 'text':
        texts.push(part.text);
        return;
      case 'image':
      case 'audio': {
        const bytes = Buffer.from(part.data, 'base64');
        references.push({
          type: part.type,
          ref,
          mime_type: part.mimeType,
          size_bytes: bytes.length,
          sha256: createHash('sha256').update(bytes).digest('hex'),
        });
        return;
      }
      case 'resource_link':
        references.push({
          type: 'resource_link',
          uri: part.uri,
          name: part.name,
          ...(part.mimeType === undefined ? {} : { mime_type: part.mimeType }),
        });
        return;
      case 'resource': {
        const { resource } = part;
        const size =
          'text' in resource ? Buffer.byteLength(resource.text) : Buffer.from(resource.blob, 'base64').length;
        references.push({
          type: 'resource',
          ref,
          uri: resource.uri,
          ...(resource.mimeType === undefined ? {} : { mime_type: resource.mimeType }),
          size_bytes: size,
        });
        return;
      }
    }
  });
  const joined = texts.join('\n');
  const textTruncated = Buffer.byteLength(joined) > maxBytes;
  const text = textTruncated ? cutToBytes(joined, maxBytes) + truncationMarker(maxBytes) : joined;
  if (result.isError === true) {
    const said = text === '' ? 'no message' : text;
    return toolFailure(
      ErrorCode.TOOL_ERROR,
      `${origin.tool} failed: ${said}`,
      references.length === 0 ? undefined : { references },
    );
  }
  const structured = boundedStructure(result.structuredContent, maxBytes);
  if (structured === undefined && references.length === 0) return toolSuccess(text, textTruncated);
  return toolSuccess(
    {
      ...(text === '' ? {} : { text }),
      ...(structured === undefined ? {} : { structured_content: structured.value }),
      ...(references.length === 0 ? {} : { references }),
    },
    textTruncated || structured?.truncated === true,
  );
}

function boundedStructure(
  structured: Record<string, unknown> | undefined,
  maxBytes: number,
): { value: unknown; truncated: boolean } | undefined {
  if (structured === undefined) return undefined;
  const size = Buffer.byteLength(JSON.stringify(structured));
  if (size <= maxBytes) return { value: structured, truncated: false };
  return { value: { truncated: true, size_bytes: size, limit_bytes: maxBytes }, truncated: true };
}

/** The longest prefix of `text` within `maxBytes` of UTF-8, never splitting a character. */
function cutToBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8').subarray(0, maxBytes);
  return new TextDecoder('utf-8', { fatal: false }).decode(bytes).replace(/\uFFFD$/, '');
}
