/**
 * Where the stdio form of the test kit's MCP server lives on disk, for tests that launch it with `node`.
 */
import { fileURLToPath } from 'node:url';

/** Absolute path of `mcp-stdio-server.js` (always the built one in `dist/`, also when tests run from `src/`). */
export const MCP_STDIO_SERVER_SCRIPT = fileURLToPath(
  new URL('../../dist/mcp/mcp-stdio-server.js', import.meta.url),
);
