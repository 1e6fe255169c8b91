// The two things that name an agent version, kept apart from agent-version.ts so task.ts can use them
// without importing the agent definition (which imports task.ts).
import { z } from 'zod';

/** A version number: 1 for an agent's first write, then one more for each write. */
export const AgentVersionNumber = z.int().min(1).max(999_999_999);
export type AgentVersionNumber = z.infer<typeof AgentVersionNumber>;

/** `sha256:<64 hex>` of the canonical JSON of the definition as stored (`canonicalJson`). */
export const AgentDigest = z.string().regex(/^sha256:[0-9a-f]{64}$/, 'digest must be sha256:<64 hex>');
export type AgentDigest = z.infer<typeof AgentDigest>;
