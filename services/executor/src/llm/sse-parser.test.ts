import { describe, expect, it } from 'vitest';
import { SseLimitError, SseParser, type SseEvent } from './sse-parser.js';

function parseInPieces(pieces: readonly string[]): SseEvent[] {
  const parser = new SseParser();
  return [...pieces.flatMap((piece) => parser.push(piece)), ...parser.end()];
}

const STREAM =
  ': keep-alive\r\n' +
  'data: {"a":1}\r\n\r\n' +
  'event: ping\ndata:no-space\n\n' +
  'data: line one\r\ndata: line two\r\n\r\n' +
  ':another comment\n\n' +
  'data: [DONE]\n\n';

const EXPECTED: SseEvent[] = [
  { event: 'message', data: '{"a":1}' },
  { event: 'ping', data: 'no-space' },
  { event: 'message', data: 'line one\nline two' },
  { event: 'message', data: '[DONE]' },
];

describe('SSE parser', () => {
  it('when a stream arrives whole, each event comes out once with comments skipped', () => {
    expect(parseInPieces([STREAM])).toEqual(EXPECTED);
  });

  it('when the stream is cut at every possible point, the events are the same', () => {
    for (let cut = 1; cut < STREAM.length; cut++) {
      expect(parseInPieces([STREAM.slice(0, cut), STREAM.slice(cut)]), `cut at ${cut}`).toEqual(EXPECTED);
    }
  });

  it('when the stream arrives one character at a time (CRLF split between pieces), the events are the same', () => {
    expect(parseInPieces([...STREAM])).toEqual(EXPECTED);
  });

  it('when lines end in a bare CR, they still end', () => {
    expect(parseInPieces(['data: x\r\rdata: y\r', '\r'])).toEqual([
      { event: 'message', data: 'x' },
      { event: 'message', data: 'y' },
    ]);
  });

  it('when a blank line follows only comments or unknown fields, no event is dispatched', () => {
    expect(parseInPieces([': ping\n\nid: 7\nretry: 10\n\n'])).toEqual([]);
  });

  it('when the stream opens with a byte order mark, it is ignored', () => {
    expect(parseInPieces(['\uFEFFdata: x\n\n'])).toEqual([{ event: 'message', data: 'x' }]);
  });

  it('when the stream ends without the closing blank line, the last event is still delivered', () => {
    expect(parseInPieces(['data: {"a":1}\n\ndata: [DONE]'])).toEqual([
      { event: 'message', data: '{"a":1}' },
      { event: 'message', data: '[DONE]' },
    ]);
  });

  it('when an event grows past the limit, the parser refuses it instead of buffering forever', () => {
    const parser = new SseParser(32);
    parser.push('data: 0123456789\n');
    expect(() => parser.push('data: 0123456789012345678901234567890')).toThrow(SseLimitError);
  });
});
