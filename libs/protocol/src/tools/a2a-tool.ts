// A remote A2A (Agent2Agent) agent called as a tool. Stored in the tool registry like an HTTP tool and bound
// to agents by name; the executor fetches the agent's Agent Card (through its SSRF guard), tells the model
// what the card says the agent (or the named skill) does, and runs a call as one A2A task: the `message`
// argument is sent with `SendStreamingMessage`, the remote task's progress streamed back, its artifacts the
// result.
//
// Credentials are named, never held: `auth.credential` names a vault entry the assembler seals into the
// task; the executor sends its value to that agent only, as `Authorization: Bearer <value>`, or as the value
// of `auth.header` when given (an API key header).
import { z } from 'zod';
import { CredentialName } from './http-auth.js';
import type { JsonSchemaObject } from './json-schema.js';

/** A header name as RFC 9110 defines a token. */
const HeaderToken = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'a header name (an RFC 9110 token)');

/** Headers the HTTP client and the A2A binding own: a credential never goes into them. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'connection',
  'content-length',
  'content-type',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'keep-alive',
  'accept',
  'a2a-version',
  'a2a-extensions',
]);

export const A2aAuth = z.strictObject({
  /** The vault entry whose value authenticates the calls (the user's credential, else the account's). */
  credential: CredentialName,
  /** The header that carries the value as is (e.g. `X-Api-Key`); absent: `Authorization: Bearer <value>`. */
  header: HeaderToken.refine(
    (name) => !RESERVED_HEADERS.has(name.toLowerCase()) && !name.toLowerCase().startsWith('proxy-'),
    { message: 'a header the HTTP client or the A2A binding sets cannot carry a credential' },
  ).optional(),
});
export type A2aAuth = z.infer<typeof A2aAuth>;

/**
 * The argument with which a call answers a remote task that stopped for more input (A2A `input-required`):
 * that task's id, as the earlier call's error gave it. The executor adds it to every A2A tool the model sees
 * and accepts only the id of a remote task of the same task and tool that waits for input. The name is
 * reserved: a stored tool's own parameter of that name is read as this one, never sent to the agent.
 */
export const A2A_CONTINUE_TASK_ARGUMENT = 'continue_task_id';

/** The one argument every A2A tool takes: what to ask the remote agent. */
export function a2aMessageParameters(about?: string): JsonSchemaObject {
  return {
    type: 'object',
    properties: {
      message: {
        type: 'string',
        description:
          about ??
          'What to ask the remote agent: the whole request, self-contained (it sees nothing else of this conversation).',
      },
    },
    required: ['message'],
  };
}

/** The vault entries an A2A tool's auth reads. */
export function a2aToolCredentials(tool: { auth?: A2aAuth | undefined }): string[] {
  return tool.auth === undefined ? [] : [tool.auth.credential];
}
