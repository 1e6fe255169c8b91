/**
 * HTTP on a bare TCP socket, for tests of what a normal client cannot send: malformed request lines,
 * oversized headers, requests without Host, pipelined requests. `exchange` writes bytes, then reads
 * until the server closes the connection; `parseResponses` splits what came back into responses.
 */
import { connect } from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

export interface RawSocket {
  /** Sends more bytes on the open connection. */
  write(data: string): void;
  /** Everything received once the server has closed the connection. */
  closed: Promise<string>;
  /** Resolves once the received text satisfies `test`. */
  received(test: (text: string) => boolean): Promise<string>;
}

/** Opens a connection to `baseUrl`'s host and port and sends `data`. */
export function openRaw(baseUrl: string, data: string): RawSocket {
  const url = new URL(baseUrl);
  const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port) });
  let text = '';
  const waiting = new Set<() => void>();
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    text += chunk;
    for (const check of waiting) check();
  });
  // A server that closes right after answering may reset a connection still writing; what it sent
  // before is what the test reads.
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(text)));
  socket.write(data);
  return {
    write: (more) => void socket.write(more),
    closed,
    received: (test) =>
      new Promise<string>((resolve, reject) => {
        const check = (): void => {
          if (!test(text)) return;
          waiting.delete(check);
          resolve(text);
        };
        waiting.add(check);
        void closed.then(() => {
          if (waiting.delete(check)) reject(new Error(`connection closed; received: ${text.slice(0, 500)}`));
        });
        check();
      }),
  };
}

/** Sends `data` and reads until the server closes the connection. */
export async function exchange(baseUrl: string, data: string): Promise<string> {
  return openRaw(baseUrl, data).closed;
}

/** The responses in `text`, in order (bodies by Content-Length or chunked); a cut-off one is left out. */
export function parseResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) return responses;
    const [statusLine = '', ...lines] = rest.slice(0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    rest = rest.slice(headEnd + 4);
    let body = '';
    if (headers['transfer-encoding'] === 'chunked') {
      for (;;) {
        const sizeEnd = rest.indexOf('\r\n');
        if (sizeEnd < 0) return responses;
        const size = parseInt(rest.slice(0, sizeEnd), 16);
        if (rest.length < sizeEnd + 2 + size + 2) return responses;
        body += rest.slice(sizeEnd + 2, sizeEnd + 2 + size);
        rest = rest.slice(sizeEnd + 2 + size + 2);
        if (size === 0) break;
      }
    } else {
      const length = Number(headers['content-length'] ?? 0);
      if (rest.length < length) return responses;
      body = rest.slice(0, length);
      rest = rest.slice(length);
    }
    responses.push({ status, headers, body: Buffer.from(body, 'latin1').toString('utf8') });
  }
}
