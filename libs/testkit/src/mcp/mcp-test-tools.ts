/**
 * The tools of the test kit's MCP server, shared by its Streamable HTTP form and its stdio script: one that
 * succeeds (`echo`), one with structured content (`add`), one that fails with `isError` (`fail`), one that
 * streams progress notifications (`count_slowly`), one that answers an image and a resource link (`snapshot`),
 * one that waits until it is cancelled (`wait_for_cancel`), and one that changes the tool list (`unlock_tool`
 * registers `late_tool` and the SDK sends `notifications/tools/list_changed`).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestInfo } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** A 1×1 transparent PNG. */
export const MCP_TEST_IMAGE_BASE64 =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=';
export const MCP_TEST_RESOURCE_URI = 'file:///reports/latest.csv';

/** What happens inside a tool call, for the HTTP server's records. */
export interface McpToolHooks {
  /** A call reached the tool's handler, with the headers of the HTTP request that carried it (none over stdio). */
  onCall?(
    tool: string,
    args: Record<string, unknown>,
    headers: Record<string, string | string[] | undefined>,
    /** The request's `_meta` (progress token, idempotency key, ...), when it has one. */
    meta?: Record<string, unknown>,
  ): void;
  /** `wait_for_cancel` saw its request cancelled by the client. */
  onCancelled?(tool: string): void;
}

export function registerMcpTestTools(server: McpServer, hooks: McpToolHooks = {}): void {
  server.registerTool(
    'echo',
    { description: 'Echoes the text back.', inputSchema: { text: z.string() } },
    ({ text }, extra) => {
      hooks.onCall?.('echo', { text }, headersOf(extra), extra._meta);
      return { content: [{ type: 'text', text: `echo: ${text}` }] };
    },
  );
  server.registerTool(
    'add',
    {
      description: 'Adds two numbers.',
      inputSchema: { a: z.number(), b: z.number() },
      outputSchema: { sum: z.number() },
    },
    ({ a, b }, extra) => {
      hooks.onCall?.('add', { a, b }, headersOf(extra), extra._meta);
      return { content: [{ type: 'text', text: String(a + b) }], structuredContent: { sum: a + b } };
    },
  );
  server.registerTool(
    'fail',
    { description: 'Always fails with isError.', inputSchema: { reason: z.string() } },
    ({ reason }, extra) => {
      hooks.onCall?.('fail', { reason }, headersOf(extra), extra._meta);
      return { isError: true, content: [{ type: 'text', text: `failed: ${reason}` }] };
    },
  );
  server.registerTool(
    'count_slowly',
    { description: 'Counts to `steps`, reporting progress at each step.', inputSchema: { steps: z.int() } },
    async ({ steps }, extra) => {
      hooks.onCall?.('count_slowly', { steps }, headersOf(extra), extra._meta);
      const progressToken = extra._meta?.progressToken;
      for (let step = 1; step <= steps; step += 1) {
        if (progressToken !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken, progress: step, total: steps, message: `step ${step} of ${steps}` },
          });
        }
      }
      return { content: [{ type: 'text', text: `counted to ${steps}` }] };
    },
  );
  server.registerTool('snapshot', { description: 'Answers an image and a resource link.' }, (extra) => {
    hooks.onCall?.('snapshot', {}, headersOf(extra), extra._meta);
    return {
      content: [
        { type: 'text', text: 'snapshot taken' },
        { type: 'image', data: MCP_TEST_IMAGE_BASE64, mimeType: 'image/png' },
        { type: 'resource_link', uri: MCP_TEST_RESOURCE_URI, name: 'latest.csv', mimeType: 'text/csv' },
      ],
    };
  });
  server.registerTool(
    'wait_for_cancel',
    { description: 'Runs until the client cancels the call.' },
    async (extra) => {
      hooks.onCall?.('wait_for_cancel', {}, headersOf(extra), extra._meta);
      await new Promise<void>((resolve) => {
        if (extra.signal.aborted) resolve();
        else extra.signal.addEventListener('abort', () => resolve(), { once: true });
      });
      hooks.onCancelled?.('wait_for_cancel');
      return { content: [{ type: 'text', text: 'cancelled' }] };
    },
  );
  let unlocked = false;
  server.registerTool('unlock_tool', { description: 'Adds `late_tool` to the tool list.' }, (extra) => {
    hooks.onCall?.('unlock_tool', {}, headersOf(extra), extra._meta);
    if (!unlocked) {
      unlocked = true;
      registerLateTool(server, hooks);
    }
    return { content: [{ type: 'text', text: 'late_tool unlocked' }] };
  });
}

/** The tool `unlock_tool` (or the HTTP server's `changeTools()`) adds; the SDK announces the change. */
export function registerLateTool(server: McpServer, hooks: McpToolHooks = {}): void {
  server.registerTool('late_tool', { description: 'Appeared after the list changed.' }, (extra) => {
    hooks.onCall?.('late_tool', {}, headersOf(extra), extra._meta);
    return { content: [{ type: 'text', text: 'late tool ran' }] };
  });
}

function headersOf(extra: { requestInfo?: RequestInfo }): Record<string, string | string[] | undefined> {
  return { ...(extra.requestInfo?.headers ?? {}) };
}
