import { describe, expect, it } from 'vitest';
import { SseLimitError, SseParser, type SseMessage } from './sse-parser.js';

// Everything the parser must cope with in one stream: LF, CRLF and lone CR line ends, comments
// (heartbeats), a multi-line data field, a field without a space after the colon, retry, unknown
// fields and a block that carries only an id.
const STREAM =
  ': ping\n\n' +
  'retry: 1500\r\n' +
  'id: 1\r\nevent: message_chunk\r\ndata: {"delta":"字节跳动"}\r\n\r\n' +
  'id: 2\rdata: first line\rdata:second line\rfoo: ignored\r\r' +
  ': ping\r\n\r\n' +
  'id: 3\n\n' +
  'event: done\ndata: {"end":true}\n\n';

const EXPECTED: SseMessage[] = [
  { id: '1', event: 'message_chunk', data: '{"delta":"字节跳动"}' },
  { id: '2', event: 'message', data: 'first line\nsecond line' },
  // The id of a block without data carries over to the next message, as in the spec.
  { id: '3', event: 'done', data: '{"end":true}' },
];

function parseInChunks(chunks: readonly string[]): { messages: SseMessage[]; parser: SseParser } {
  const parser = new SseParser();
  const messages = chunks.flatMap((chunk) => parser.push(chunk));
  return { messages, parser };
}

describe('SseParser', () => {
  it('when the stream arrives whole, every message, id and the retry delay come out', () => {
    const { messages, parser } = parseInChunks([STREAM]);
    expect(messages).toEqual(EXPECTED);
    expect(parser.retryMs).toBe(1500);
  });

  it('when the stream is cut in two at any position (inside CRLF, inside a field name), the messages are the same', () => {
    for (let at = 0; at <= STREAM.length; at++) {
      const { messages } = parseInChunks([STREAM.slice(0, at), STREAM.slice(at)]);
      expect(messages, `cut at ${at}: ${JSON.stringify(STREAM.slice(at - 2, at + 2))}`).toEqual(EXPECTED);
    }
  });

  it('when the stream arrives one character at a time, the messages are the same', () => {
    expect(parseInChunks([...STREAM]).messages).toEqual(EXPECTED);
  });

  it('when a CR ends one chunk and the next chunk starts with LF, that is one line end, not an empty line', () => {
    const parser = new SseParser();
    expect(parser.push('data: a\r')).toEqual([]);
    // Were the LF a second line end, the block would be dispatched here with only "a".
    expect(parser.push('\ndata: b\r\n')).toEqual([]);
    expect(parser.push('\r\n')).toEqual([{ id: undefined, event: 'message', data: 'a\nb' }]);
  });

  it('when the stream ends inside a message, that message is never dispatched', () => {
    const parser = new SseParser();
    expect(parser.push('id: 1\ndata: {"complete":true}\n\nid: 2\ndata: {"cut')).toHaveLength(1);
    expect(parser.push('":true}\n')).toEqual([]);
  });

  it('when the stream starts with a byte order mark, the first field is still read', () => {
    expect(new SseParser().push('\uFEFFdata: x\n\n')).toEqual([
      { id: undefined, event: 'message', data: 'x' },
    ]);
  });

  it('when retry is not a number, the earlier retry delay stays', () => {
    const parser = new SseParser();
    parser.push('retry: 200\n\nretry: soon\n\n');
    expect(parser.retryMs).toBe(200);
  });

  it('when lines end in a bare CR, they still end', () => {
    const parser = new SseParser();
    expect([...parser.push('data: x\r\rdata: y\r'), ...parser.push('\r')]).toEqual([
      { id: undefined, event: 'message', data: 'x' },
      { id: undefined, event: 'message', data: 'y' },
    ]);
  });

  it('when the stream ends without the closing blank line, end() hands over the last message for readers that take it', () => {
    const parser = new SseParser();
    expect(parser.push('data: {"a":1}\n\ndata: [DONE]')).toEqual([
      { id: undefined, event: 'message', data: '{"a":1}' },
    ]);
    expect(parser.end()).toEqual([{ id: undefined, event: 'message', data: '[DONE]' }]);
  });

  it('when a message grows past the limit, the parser refuses it instead of buffering forever', () => {
    const parser = new SseParser(32);
    parser.push('data: 0123456789\n');
    expect(() => parser.push('data: 0123456789012345678901234567890')).toThrow(SseLimitError);
  });

  it('when one line without an end grows past the limit, the parser refuses it too', () => {
    const parser = new SseParser(32);
    expect(() => parser.push(`data: ${'x'.repeat(40)}`)).toThrow(SseLimitError);
  });
});
