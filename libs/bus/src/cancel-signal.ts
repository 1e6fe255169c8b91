/**
 * Reads a cancel broadcast (`mesh.control.cancel.<account>.<trace_id>`). Anyone allowed to publish there
 * could send anything, so a body that is not a CancelSignal, or names another task than its subject,
 * is no signal at all.
 */
import { cancelSubject, CancelSignal } from '@agentmesh/protocol';

const decoder = new TextDecoder();

/** The signal, if the body is one and names the task its subject names. */
export function decodeCancelSignal(subject: string, data: Uint8Array): CancelSignal | undefined {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(data));
  } catch {
    return undefined;
  }
  const parsed = CancelSignal.safeParse(body);
  if (!parsed.success) return undefined;
  return cancelSubject(parsed.data.account_id, parsed.data.trace_id) === subject ? parsed.data : undefined;
}
