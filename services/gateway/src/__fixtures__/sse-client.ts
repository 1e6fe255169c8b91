/**
 * A minimal Server-Sent Events client for tests: reads a `fetch` response body as it arrives and
 * yields each frame — an event (`id`, `event`, `data`) or a comment (`: ping`) — ending when the
 * server closes the stream.
 */
export type SseFrame =
  { kind: 'event'; id?: string; event?: string; data: string } | { kind: 'comment'; text: string };

export interface SseConnection {
  status: number;
  contentType: string | null;
  frames: AsyncGenerator<SseFrame>;
  /** Drops the connection, as a client going away does. */
  close(): void;
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseConnection> {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  return {
    status: response.status,
    contentType: response.headers.get('content-type'),
    frames: readFrames(response, controller.signal),
    close: () => controller.abort(),
  };
}

async function* readFrames(response: Response, signal: AbortSignal): AsyncGenerator<SseFrame> {
  if (!response.body) return;
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        yield* parseBlock(block);
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

function* parseBlock(block: string): Generator<SseFrame> {
  const event: { id?: string; event?: string; data: string[] } = { data: [] };
  let isEvent = false;
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) {
      yield { kind: 'comment', text: line.slice(1).trim() };
      continue;
    }
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
    isEvent = true;
    if (field === 'id') event.id = value;
    else if (field === 'event') event.event = value;
    else if (field === 'data') event.data.push(value);
  }
  if (isEvent) {
    yield {
      kind: 'event',
      ...(event.id !== undefined ? { id: event.id } : {}),
      ...(event.event !== undefined ? { event: event.event } : {}),
      data: event.data.join('\n'),
    };
  }
}

export type SseEventFrame = Extract<SseFrame, { kind: 'event' }>;

/** The next event frame, skipping comments; undefined when the stream ended. */
export async function nextEvent(sse: SseConnection): Promise<SseEventFrame | undefined> {
  for (;;) {
    const { value, done } = await sse.frames.next();
    if (done) return undefined;
    if (value.kind === 'event') return value;
  }
}

/** Every event frame until the server ends the stream. */
export async function remainingEvents(sse: SseConnection): Promise<SseEventFrame[]> {
  const events: SseEventFrame[] = [];
  for (let event = await nextEvent(sse); event; event = await nextEvent(sse)) events.push(event);
  return events;
}
