import { describe, expect, it } from 'vitest';
import { mcpOutcome } from './mcp-result.js';

const origin = { server: 'kit', tool: 'report', callId: 'call_1' };
const PNG = Buffer.from('not really a png').toString('base64');

describe('mcpOutcome', () => {
  it('text alone is the result as it is', () => {
    expect(
      mcpOutcome(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        origin,
        1024,
      ),
    ).toEqual({
      ok: true,
      result: 'a\nb',
    });
  });

  it('isError is a TOOL_ERROR carrying the server’s text', () => {
    expect(mcpOutcome({ isError: true, content: [{ type: 'text', text: 'no disk' }] }, origin, 1024)).toEqual(
      {
        ok: false,
        error: { code: 'TOOL_ERROR', message: 'report failed: no disk' },
      },
    );
  });

  it('images and embedded resources become references with size and digest, never their bytes', () => {
    const outcome = mcpOutcome(
      {
        content: [
          { type: 'image', data: PNG, mimeType: 'image/png' },
          {
            type: 'resource',
            resource: { uri: 'file:///a.bin', blob: PNG, mimeType: 'application/octet-stream' },
          },
        ],
        structuredContent: { rows: 2 },
      },
      origin,
      1024,
    );
    expect(outcome).toEqual({
      ok: true,
      result: {
        structured_content: { rows: 2 },
        references: [
          {
            type: 'image',
            ref: 'mcp://kit/report/call_1/0',
            mime_type: 'image/png',
            size_bytes: 16,
            sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
          },
          {
            type: 'resource',
            ref: 'mcp://kit/report/call_1/1',
            uri: 'file:///a.bin',
            mime_type: 'application/octet-stream',
            size_bytes: 16,
          },
        ],
      },
    });
    expect(JSON.stringify(outcome)).not.toContain(PNG);
  });

  it('text and structured content past the limit are cut off and marked truncated', () => {
    const outcome = mcpOutcome(
      { content: [{ type: 'text', text: 'é'.repeat(100) }], structuredContent: { big: 'x'.repeat(500) } },
      origin,
      51,
    );
    if (!outcome.ok) throw new Error('expected a result');
    expect(outcome.truncated).toBe(true);
    const result = outcome.result as { text: string; structured_content: unknown };
    expect(result.text.startsWith('é'.repeat(25))).toBe(true);
    expect(result.text).not.toContain('é'.repeat(26));
    expect(result.text).toContain('truncated');
    expect(result.structured_content).toEqual({ truncated: true, size_bytes: 510, limit_bytes: 51 });
  });
});
