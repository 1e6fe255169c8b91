// @agentmesh/sse: an incremental Server-Sent Events parser. Pure: text in, messages out.

export { SseLimitError, SseParser } from './sse-parser.js';
export type { SseMessage } from './sse-parser.js';
