// Reads an API's answer without ever holding more than a fixed number of bytes: the body stream is abandoned
// (and the connection closed) as soon as the limit is passed. Then turns the bytes into what the model sees:
// parsed JSON when the answer is JSON, text otherwise.

export interface BoundedBody {
  readonly text: string;
  /** The body was longer than the limit; `text` holds its first bytes. */
  readonly truncated: boolean;
}

interface BodyStream extends AsyncIterable<Uint8Array> {
  destroy(error?: Error): unknown;
}

export async function readBoundedBody(body: BodyStream, limitBytes: number): Promise<BoundedBody> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  try {
    for await (const chunk of body) {
      const room = limitBytes - size;
      if (chunk.byteLength > room) {
        chunks.push(chunk.subarray(0, room));
        size += room;
        truncated = true;
        break;
      }
      chunks.push(chunk);
      size += chunk.byteLength;
    }
  } finally {
    // Leaving the loop early stops the stream; destroying makes sure nothing more is buffered or kept open.
    if (truncated) body.destroy();
  }
  // `stream: true` holds back a multi-byte character cut in half at the limit instead of mangling it.
  const text = new TextDecoder('utf-8').decode(Buffer.concat(chunks, size), { stream: truncated });
  return { text, truncated };
}

/** Parsed JSON when the content type says JSON (or the text plainly is a JSON document), else the text. */
export function interpretBody(text: string, contentType: string | undefined): unknown {
  if (text.trim() === '') return null;
  const mediaType = (contentType?.split(';')[0] ?? '').trim().toLowerCase();
  const saysJson = mediaType === 'application/json' || mediaType.endsWith('+json');
  if (saysJson || /^\s*[[{]/.test(text)) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}

export function truncationMarker(limitBytes: number): string {
  return `\n…[truncated: the response was larger than ${limitBytes} bytes; only its beginning is shown]`;
}
